// Per-token FP8 quantisation: one block per row; pass 1 finds amax, pass 2 converts with
// the hardware cvt (satfinite, round-to-nearest-even; fp8_row_quant.cuh). The vector kernel keeps the row in
// registers between the passes (16-byte loads, rows up to kVecRowMax values); other rows
// take the scalar kernel, which reads the row twice.
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <string>

#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/fp8_quant.h"
#include "kernels/cuda/fp8_row_quant.cuh"
#include "kernels/cuda/programmatic_launch.cuh"

namespace crosspoint::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kVecPerThread = 10;                         // 16-byte vectors held per thread
constexpr int kVecRowMax = kThreads * 8 * kVecPerThread;  // 20480 fp16 values

// Rows with k % 8 == 0, k <= kVecRowMax, 16-byte aligned rows.
__global__ void __launch_bounds__(kThreads)
    fp8_quantize_per_token_vec_kernel(const __half* __restrict__ x, int64_t x_stride, uint8_t* __restrict__ q,
                                      int64_t q_stride, float* __restrict__ scale, int k) {
  wait_for_prior_kernels();
  allow_dependent_launch();
  const uint4* row = reinterpret_cast<const uint4*>(x + blockIdx.x * x_stride);
  uint2* out = reinterpret_cast<uint2*>(q + blockIdx.x * q_stride);
  const int num_vec = k / 8;
  uint4 v[kVecPerThread];
  float amax = 0.f;
#pragma unroll
  for (int i = 0; i < kVecPerThread; ++i) {
    const int idx = threadIdx.x + i * kThreads;
    v[i] = idx < num_vec ? row[idx] : make_uint4(0, 0, 0, 0);
    amax = fp8_amax8(v[i], amax);
  }
  const float s = fp8_block_row_scale<kThreads>(amax, scale + blockIdx.x);
#pragma unroll
  for (int i = 0; i < kVecPerThread; ++i) {
    const int idx = threadIdx.x + i * kThreads;
    if (idx >= num_vec) break;
    out[idx] = fp8_quantize8(v[i], s);
  }
}

__global__ void __launch_bounds__(kThreads)
    fp8_quantize_per_token_kernel(const __half* __restrict__ x, int64_t x_stride, uint8_t* __restrict__ q,
                                  int64_t q_stride, float* __restrict__ scale, int k) {
  wait_for_prior_kernels();
  allow_dependent_launch();
  const __half* row = x + blockIdx.x * x_stride;
  uint8_t* out = q + blockIdx.x * q_stride;
  float amax = 0.f;
  for (int i = threadIdx.x; i < k; i += kThreads) amax = fmaxf(amax, fabsf(__half2float(row[i])));
  const float s = fp8_block_row_scale<kThreads>(amax, scale + blockIdx.x);
  for (int i = threadIdx.x; i < k; i += kThreads)
    out[i] = static_cast<uint8_t>(fp8_quantize_value(__half2float(row[i]), s));
}

// One block per row; no amax pass.
__global__ void __launch_bounds__(kThreads)
    fp8_quantize_static_kernel(const __half* __restrict__ x, int64_t x_stride, uint8_t* __restrict__ q,
                               int64_t q_stride, float* __restrict__ scale, const float* __restrict__ static_scale,
                               int k) {
  wait_for_prior_kernels();
  allow_dependent_launch();
  const float s = *static_scale;
  if (threadIdx.x == 0) scale[blockIdx.x] = s;
  const __half* row = x + blockIdx.x * x_stride;
  uint8_t* out = q + blockIdx.x * q_stride;
  for (int i = threadIdx.x; i < k; i += kThreads)
    out[i] = static_cast<uint8_t>(fp8_quantize_value(__half2float(row[i]), s));
}

}  // namespace

Status fp8_quantize_static(const uint16_t* x, int64_t x_stride, uint8_t* q, int64_t q_stride, float* scale,
                           const float* static_scale, int m, int k, cudaStream_t stream) {
  if (m == 0) return Status::ok();
  if (m < 0 || k <= 0)
    return invalid_argument("fp8_quantize_static: bad shape m=" + std::to_string(m) + " k=" + std::to_string(k));
  if (x_stride < k || q_stride < k) return invalid_argument("fp8_quantize_static: row stride smaller than k");
  if (static_scale == nullptr) return invalid_argument("fp8_quantize_static: no scale");
  CROSSPOINT_CUDA_RETURN_IF_ERROR(
      launch_programmatic(fp8_quantize_static_kernel, dim3(m), dim3(kThreads), 0, stream,
                          reinterpret_cast<const __half*>(x), x_stride, q, q_stride, scale, static_scale, k),
      "fp8_quantize_static launch");
  return last_launch_status("fp8_quantize_static launch");
}

Status fp8_quantize_per_token(const uint16_t* x, int64_t x_stride, uint8_t* q, int64_t q_stride, float* scale, int m,
                              int k, cudaStream_t stream) {
  if (m == 0) return Status::ok();
  if (m < 0 || k <= 0)
    return invalid_argument("fp8_quantize_per_token: bad shape m=" + std::to_string(m) + " k=" + std::to_string(k));
  if (x_stride < k || q_stride < k) return invalid_argument("fp8_quantize_per_token: row stride smaller than k");
  const bool vector_rows = k % 8 == 0 && k <= kVecRowMax && x_stride % 8 == 0 && q_stride % 8 == 0 &&
                           reinterpret_cast<uintptr_t>(x) % 16 == 0 && reinterpret_cast<uintptr_t>(q) % 8 == 0;
  const __half* xh = reinterpret_cast<const __half*>(x);
  const cudaError_t err = vector_rows ? launch_programmatic(fp8_quantize_per_token_vec_kernel, dim3(m), dim3(kThreads),
                                                            0, stream, xh, x_stride, q, q_stride, scale, k)
                                      : launch_programmatic(fp8_quantize_per_token_kernel, dim3(m), dim3(kThreads), 0,
                                                            stream, xh, x_stride, q, q_stride, scale, k);
  CROSSPOINT_CUDA_RETURN_IF_ERROR(err, "fp8_quantize_per_token launch");
  return last_launch_status("fp8_quantize_per_token launch");
}

}  // namespace crosspoint::cuda
