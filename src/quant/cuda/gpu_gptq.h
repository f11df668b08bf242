// GPTQ and RTN int4 quantisation of one linear on the GPU, the device twin of
// quant/int4_quantizer.h (kernels/cuda/gptq.h). The Hessian is summed from the layer's fp16
// inputs (cuBLAS, f32 per batch of rows, f64 across batches); its factor comes from a blocked
// Cholesky (the 256 x 256 diagonal blocks factored on the host, cuBLAS's f64 triangular solves
// and rank-k updates around them) and one triangular solve for the inverse. Given the same factor
// (set_factor) the column loop writes the host's codes, scales and zero points bit for bit; a
// factor of its own differs from the host's by f64 reduction order only. Built only with the
// CUDA backend.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "common/status.h"
#include "model/cuda/device_buffer.h"
#include "quant/int4_quantizer.h"

namespace crosspoint {

class GpuGptq {
 public:
  // Work is queued on `stream` (the CUDA model's, so layer inputs are read in order). Fails
  // (unsupported) without a visible GPU.
  static Result<std::unique_ptr<GpuGptq>> create(cudaStream_t stream);
  ~GpuGptq();
  GpuGptq(const GpuGptq&) = delete;
  GpuGptq& operator=(const GpuGptq&) = delete;

  // The Hessian of one layer input of K features: begin, add batches of rows, then factor.
  Status begin_hessian(int64_t K);
  // x: [rows, K] fp16 on the device (row stride K).
  Status add_rows(const uint16_t* x, int64_t rows);
  // GPTQ's factor of the Hessian summed so far (dead features, act-order, damping as the host).
  Status factor(const Int4QuantOptions& options);
  // A factor computed on the host (gptq_factor_hessian) instead.
  Status set_factor(const GptqHessianFactor& factor);

  // Quantises w_nk [N, K] fp16 on the device: GPTQ with the current factor, or RTN (gptq false).
  // write_back: w_nk then holds the dequantised weights (what later layers should see).
  // column_loss, when given, gets each output column's share of the loss.
  Result<Int4Quantized> quantize(uint16_t* w_nk, int64_t N, int64_t K, const Int4QuantOptions& options, bool gptq,
                                 bool write_back, std::vector<double>* column_loss = nullptr);

  // The most device memory this object held at once (bytes).
  size_t peak_device_bytes() const { return peak_bytes_; }

 private:
  struct Impl;
  explicit GpuGptq(std::unique_ptr<Impl> impl);
  Status reserve(cuda::DeviceBuffer& buffer, size_t bytes, const char* what);
  Status factor_device(const Int4QuantOptions& options);

  std::unique_ptr<Impl> impl_;
  int64_t hessian_k_ = 0;
  int64_t factor_k_ = 0;  // K of the factor held (0: none)
  size_t peak_bytes_ = 0;
};

}  // namespace crosspoint
