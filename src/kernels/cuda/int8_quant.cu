// Per-token and static int8 activation quantisation: one block per row. The per-token vector
// kernel keeps the row in registers between amax and the codes (16-byte loads, rows up to
// kVecRowMax values); other rows take the scalar kernel, which reads the row twice.
#include <cuda_fp16.h>

#include <cstdint>
#include <string>

#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/fp8_row_quant.cuh"  // fp8_amax8
#include "kernels/cuda/int8_quant.h"
#include "kernels/cuda/programmatic_launch.cuh"

namespace crosspoint::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kVecPerThread = 10;                         // 16-byte vectors held per thread
constexpr int kVecRowMax = kThreads * 8 * kVecPerThread;  // 20480 fp16 values
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

// Rows with k % 8 == 0, k <= kVecRowMax, x 16-byte and q 8-byte aligned: the same arithmetic
// per value as the scalar kernel, so the same bits.
__global__ void __launch_bounds__(kThreads)
    int8_quantize_per_token_vec_kernel(const __half* __restrict__ x, int64_t x_stride, int8_t* __restrict__ q,
                                       int64_t q_stride, float* __restrict__ scale, int k) {
  wait_for_prior_kernels();
  allow_dependent_launch();
  const uint4* row = reinterpret_cast<const uint4*>(x + blockIdx.x * x_stride);
  uint2* out = reinterpret_cast<uint2*>(q + blockIdx.x * q_stride);
  const int num_vec = k / 8;
  uint4 v[kVecPerThread];
#pragma unroll
  for (int i = 0; i < kVecPerThread; ++i) {  // every load in flight before the first use
    const int idx = threadIdx.x + i * kThreads;
    v[i] = idx < num_vec ? row[idx] : make_uint4(0, 0, 0, 0);
  }
  float amax = 0.f;  // NaN skipped by fmaxf; infinity clamped once below, as saturated() would
#pragma unroll
  for (int i = 0; i < kVecPerThread; ++i) amax = fp8_amax8(v[i], amax);
  amax = block_amax(fminf(amax, kFp16Max));
  if (threadIdx.x == 0) scale[blockIdx.x] = __fdiv_rn(amax, 127.0f);
  const float inverse = amax > 0.f ? __fdiv_rn(127.0f, amax) : 0.f;
#pragma unroll
  for (int i = 0; i < kVecPerThread; ++i) {
    const int idx = threadIdx.x + i * kThreads;
    if (idx >= num_vec) break;
    const __half* h = reinterpret_cast<const __half*>(&v[i]);
    uint32_t word[2] = {0, 0};
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const uint32_t code = static_cast<uint8_t>(int8_rn(__fmul_rn(saturated(h[j]), inverse)));
      word[j / 4] |= code << (8 * (j % 4));
    }
    out[idx] = make_uint2(word[0], word[1]);
  }
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
  const bool vector_rows = k % 8 == 0 && k <= kVecRowMax && x_stride % 8 == 0 && q_stride % 8 == 0 &&
                           reinterpret_cast<uintptr_t>(x) % 16 == 0 && reinterpret_cast<uintptr_t>(q) % 8 == 0;
  const __half* xh = reinterpret_cast<const __half*>(x);
  CROSSPOINT_CUDA_RETURN_IF_ERROR(vector_rows
                                      ? launch_programmatic(int8_quantize_per_token_vec_kernel, dim3(m), dim3(kThreads),
                                                            0, stream, xh, x_stride, q, q_stride, scale, k)
                                      : launch_programmatic(int8_quantize_per_token_kernel, dim3(m), dim3(kThreads), 0,
                                                            stream, xh, x_stride, q, q_stride, scale, k),
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
