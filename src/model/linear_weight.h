// The weight of one linear layer, in whatever format it is stored: the model calls
// forward() and never looks inside. Dense f32/f16/bf16 lives here; quantised formats
// (W8A8-FP8, W4A16-GPTQ) are further subclasses registered through
// linear_weight_format.h, without touching the model (ARCHITECTURE rule 7).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "common/dtype.h"
#include "common/status.h"

namespace crosspoint {

// The storage families the kernels (CPU and CUDA) implement. A format parses its checkpoint
// tensors once into one of them; the CPU forward and the CUDA upload both read that parsed
// form, so a new format that maps onto an existing family touches only its own folder.
struct DenseWeightStorage {
  const void* weight = nullptr;  // [N, K] in dtype
  DType dtype = DType::kF32;     // f32, f16 or bf16
};
struct Fp8WeightStorage {
  const uint8_t* weight = nullptr;      // [N, K] e4m3
  const float* weight_scale = nullptr;  // [N] per output channel
  float input_scale = 0.0f;             // > 0: static per-tensor activation scale; 0: per token
};
struct Fp8BlockWeightStorage {
  const uint8_t* weight = nullptr;      // [N, K] e4m3
  const float* weight_scale = nullptr;  // [ceil(N / block_n), ceil(K / block_k)]
  int64_t block_n = 0;
  int64_t block_k = 0;
};
struct Int8WeightStorage {
  const int8_t* weight = nullptr;       // [N, K]
  const float* weight_scale = nullptr;  // [N] per output channel
  float input_scale = 0.0f;             // > 0: static per-tensor activation scale; 0: per token
};
struct Int4GroupWeightStorage {
  const int32_t* qweight = nullptr;  // [K/8, N], 8 rows per word, low nibble first; row i is in group i / group_size
  const uint16_t* scales = nullptr;  // [K/group_size, N] fp16
  const uint8_t* zeros = nullptr;    // [K/group_size, N] zero points 0..16
  const int32_t* k_perm = nullptr;   // [K]: stored row i is checkpoint row k_perm[i]; nullptr when in order
  int64_t group_size = 0;
};
using LinearWeightStorage = std::variant<DenseWeightStorage, Fp8WeightStorage, Int4GroupWeightStorage,
                                         Fp8BlockWeightStorage, Int8WeightStorage>;

struct LinearWeightView {
  LinearWeightStorage storage;
  const float* bias = nullptr;  // [N] f32, or nullptr
};

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
  // The parsed form, valid while this weight lives (the CUDA upload reads it).
  virtual LinearWeightView view() const = 0;
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
  LinearWeightView view() const override {
    return {DenseWeightStorage{weight_, dtype_}, bias_.empty() ? nullptr : bias_.data()};
  }

 private:
  const void* weight_;  // [out_features, in_features] in dtype_, not owned
  DType dtype_;
  int64_t out_features_;
  int64_t in_features_;
  std::vector<float> bias_;  // [out_features] f32, or empty
};

}  // namespace crosspoint
