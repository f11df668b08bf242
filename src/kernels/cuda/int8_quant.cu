// Per-token and static int8 activation quantisation: one block per row, the row read twice
// (amax, then the codes) through the L1/L2.
#include <cuda_fp16.h>

#include <string>

#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/int8_quant.h"
#include "kernels/cuda/programmatic_launch.cuh"

namespace crosspoint::cuda {
namespace {

constexpr int kThreads = 256;
constexpr float kFp16Max = 65504.0f;

// An fp16 value as the host reference sees it: infinities clamped to the largest finite value,
// NaN kept (amax skips it, its code is 0).
__device__ __forceinline__ float saturated(__half h) {
  const float f = __half2float(h);
  return isnan(f) ? f : fminf(fmaxf(f, -kFp16Max), kFp16Max);
}

__device__ __forceinline__ int8_t int8_rn(float v) {
  if (isnan(v)) return 0;
  return static_cast<int8_t>(__float2int_rn(fminf(fmaxf(rintf(v), -128.0f), 127.0f)));
}

__device__ __forceinline__ float block_amax(float amax) {
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, offset));
  __shared__ float warp_amax[kThreads / 32];
  __shared__ float row_amax;
  if (threadIdx.x % 32 == 0) warp_amax[threadIdx.x / 32] = amax;
  __syncthreads();
  if (threadIdx.x == 0) {
    float a = 0.f;
    for (int w = 0; w < kThreads / 32; ++w) a = fmaxf(a, warp_amax[w]);
    row_amax = a;
  }
  __syncthreads();
  return row_amax;
}

__global__ void __launch_bounds__(kThreads)
    int8_quantize_per_token_kernel(const __half* __restrict__ x, int64_t x_stride, int8_t* __restrict__ q,
                                   int64_t q_stride, float* __restrict__ scale, int k) {
  wait_for_prior_kernels();
  allow_dependent_launch();
  const __half* row = x + blockIdx.x * x_stride;
  int8_t* out = q + blockIdx.x * q_stride;
  float amax = 0.f;
  for (int i = threadIdx.x; i < k; i += kThreads) amax = fmaxf(amax, fabsf(saturated(row[i])));
  amax = block_amax(amax);
  if (threadIdx.x == 0) scale[blockIdx.x] = __fdiv_rn(amax, 127.0f);
  const float inverse = amax > 0.f ? __fdiv_rn(127.0f, amax) : 0.f;
  for (int i = threadIdx.x; i < k; i += kThreads) out[i] = int8_rn(__fmul_rn(saturated(row[i]), inverse));
}

__global__ void __launch_bounds__(kThreads)
    int8_quantize_static_kernel(const __half* __restrict__ x, int64_t x_stride, int8_t* __restrict__ q,
                                int64_t q_stride, float* __restrict__ scale, const float* __restrict__ static_scale,
                                int k) {
  wait_for_prior_kernels();
  allow_dependent_launch();
  const float s = *static_scale;
  if (threadIdx.x == 0) scale[blockIdx.x] = s;
  const __half* row = x + blockIdx.x * x_stride;
  int8_t* out = q + blockIdx.x * q_stride;
  for (int i = threadIdx.x; i < k; i += kThreads) out[i] = int8_rn(__fdiv_rn(saturated(row[i]), s));
}

Status check_shape(const char* what, int m, int k, int64_t x_stride, int64_t q_stride) {
  if (m < 0 || k <= 0)
    return invalid_argument(std::string(what) + ": bad shape m=" + std::to_string(m) + " k=" + std::to_string(k));
  if (x_stride < k || q_stride < k) return invalid_argument(std::string(what) + ": row stride smaller than k");
  return Status::ok();
}

}  // namespace

Status int8_quantize_per_token(const uint16_t* x, int64_t x_stride, int8_t* q, int64_t q_stride, float* scale, int m,
                               int k, cudaStream_t stream) {
  if (m == 0) return Status::ok();
  CROSSPOINT_RETURN_IF_ERROR(check_shape("int8_quantize_per_token", m, k, x_stride, q_stride));
  CROSSPOINT_CUDA_RETURN_IF_ERROR(
      launch_programmatic(int8_quantize_per_token_kernel, dim3(m), dim3(kThreads), 0, stream,
                          reinterpret_cast<const __half*>(x), x_stride, q, q_stride, scale, k),
      "int8_quantize_per_token launch");
  return last_launch_status("int8_quantize_per_token launch");
}

Status int8_quantize_static(const uint16_t* x, int64_t x_stride, int8_t* q, int64_t q_stride, float* scale,
                            const float* static_scale, int m, int k, cudaStream_t stream) {
  if (m == 0) return Status::ok();
  CROSSPOINT_RETURN_IF_ERROR(check_shape("int8_quantize_static", m, k, x_stride, q_stride));
  if (static_scale == nullptr) return invalid_argument("int8_quantize_static: no scale");
  CROSSPOINT_CUDA_RETURN_IF_ERROR(
      launch_programmatic(int8_quantize_static_kernel, dim3(m), dim3(kThreads), 0, stream,
                          reinterpret_cast<const __half*>(x), x_stride, q, q_stride, scale, static_scale, k),
      "int8_quantize_static launch");
  return last_launch_status("int8_quantize_static launch");
}

}  // namespace crosspoint::cuda
