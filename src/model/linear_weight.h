// The weight of one linear layer, in whatever format it is stored: the model calls
// forward() and never looks inside. Dense f32/f16/bf16 lives here; quantised formats
// (W8A8-FP8, W4A16-GPTQ) are further subclasses registered through
// linear_weight_format.h, without touching the model (ARCHITECTURE rule 7).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/dtype.h"
#include "common/status.h"

namespace crosspoint {

class LinearWeight {
 public:
  virtual ~LinearWeight() = default;

  // y = x · Wᵀ (+ bias). x: [num_rows, in_features()] f32, rows x_row_stride elements apart
  // (0 = dense); y: [num_rows, out_features()] f32, dense.
  virtual Status forward(const float* x, int64_t num_rows, int64_t x_row_stride, float* y) const = 0;

  virtual int64_t in_features() const = 0;
  virtual int64_t out_features() const = 0;
  // Bytes read from memory per forward (weights, scales, bias): the roofline's W.
  virtual size_t weight_bytes() const = 0;
  // "f16", "bf16", "f32", "w8a8-fp8", "w4a16-g128", ... for logs.
  virtual std::string format_name() const = 0;
};

// A dense weight [out_features, in_features] in f32/f16/bf16, usually pointing straight
// into the mmap'd checkpoint (zero copy); the bias, if any, is converted to f32 at load.
class DenseLinearWeight final : public LinearWeight {
 public:
  DenseLinearWeight(const void* weight, DType dtype, int64_t out_features, int64_t in_features,
                    std::vector<float> bias /* [out_features] f32 or empty */);

  Status forward(const float* x, int64_t num_rows, int64_t x_row_stride, float* y) const override;
  int64_t in_features() const override { return in_features_; }
  int64_t out_features() const override { return out_features_; }
  size_t weight_bytes() const override;
  std::string format_name() const override;

  const void* data() const { return weight_; }
  DType dtype() const { return dtype_; }

 private:
  const void* weight_;  // [out_features, in_features] in dtype_, not owned
  DType dtype_;
  int64_t out_features_;
  int64_t in_features_;
  std::vector<float> bias_;  // [out_features] f32, or empty
};

}  // namespace crosspoint
