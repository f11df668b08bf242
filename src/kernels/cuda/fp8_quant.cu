// Per-token FP8 quantisation: one block per row; pass 1 finds amax, pass 2 converts with
// the hardware cvt (satfinite, round-to-nearest-even). The vector kernel keeps the row in
// registers between the passes (16-byte loads, rows up to kVecRowMax values); other rows
// take the scalar kernel, which reads the row twice.
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <string>

#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/fp8_quant.h"

namespace crosspoint::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kVecPerThread = 10;                         // 16-byte vectors held per thread
constexpr int kVecRowMax = kThreads * 8 * kVecPerThread;  // 20480 fp16 values

// amax of the block's threads; every thread gets the row scale.
__device__ __forceinline__ float block_row_scale(float amax, float* scale_out) {
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, offset));
  __shared__ float warp_amax[kThreads / 32];
  __shared__ float row_scale;
  if (threadIdx.x % 32 == 0) warp_amax[threadIdx.x / 32] = amax;
  __syncthreads();
  if (threadIdx.x == 0) {
    float a = 0.f;
    for (int w = 0; w < kThreads / 32; ++w) a = fmaxf(a, warp_amax[w]);
    const float s = fmaxf(__fdiv_rn(a, kFp8E4M3Max), kFp8MinScale);  // IEEE division even under fast math
    row_scale = s;
    *scale_out = s;
  }
  __syncthreads();
  return row_scale;
}

__device__ __forceinline__ uint32_t quantize_pair(half2 pair, float s) {
  const float2 f = __half22float2(pair);
  const uint32_t lo = __nv_cvt_float_to_fp8(__fdiv_rn(f.x, s), __NV_SATFINITE, __NV_E4M3);
  const uint32_t hi = __nv_cvt_float_to_fp8(__fdiv_rn(f.y, s), __NV_SATFINITE, __NV_E4M3);
  return lo | hi << 8;
}

// Rows with k % 8 == 0, k <= kVecRowMax, 16-byte aligned rows.
__global__ void __launch_bounds__(kThreads)
    fp8_quantize_per_token_vec_kernel(const __half* __restrict__ x, int64_t x_stride, uint8_t* __restrict__ q,
                                      int64_t q_stride, float* __restrict__ scale, int k) {
  const uint4* row = reinterpret_cast<const uint4*>(x + blockIdx.x * x_stride);
  uint2* out = reinterpret_cast<uint2*>(q + blockIdx.x * q_stride);
  const int num_vec = k / 8;
  uint4 v[kVecPerThread];
  float amax = 0.f;
#pragma unroll
  for (int i = 0; i < kVecPerThread; ++i) {
    const int idx = threadIdx.x + i * kThreads;
    v[i] = idx < num_vec ? row[idx] : make_uint4(0, 0, 0, 0);
    const half2* h = reinterpret_cast<const half2*>(&v[i]);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const float2 f = __half22float2(__habs2(h[j]));
      amax = fmaxf(amax, fmaxf(f.x, f.y));
    }
  }
  const float s = block_row_scale(amax, scale + blockIdx.x);
#pragma unroll
  for (int i = 0; i < kVecPerThread; ++i) {
    const int idx = threadIdx.x + i * kThreads;
    if (idx >= num_vec) break;
    const half2* h = reinterpret_cast<const half2*>(&v[i]);
    uint2 packed;
    packed.x = quantize_pair(h[0], s) | quantize_pair(h[1], s) << 16;
    packed.y = quantize_pair(h[2], s) | quantize_pair(h[3], s) << 16;
    out[idx] = packed;
  }
}

__global__ void __launch_bounds__(kThreads)
    fp8_quantize_per_token_kernel(const __half* __restrict__ x, int64_t x_stride, uint8_t* __restrict__ q,
                                  int64_t q_stride, float* __restrict__ scale, int k) {
  const __half* row = x + blockIdx.x * x_stride;
  uint8_t* out = q + blockIdx.x * q_stride;
  float amax = 0.f;
  for (int i = threadIdx.x; i < k; i += kThreads) amax = fmaxf(amax, fabsf(__half2float(row[i])));
  const float s = block_row_scale(amax, scale + blockIdx.x);
  for (int i = threadIdx.x; i < k; i += kThreads) {
    const float v = __fdiv_rn(__half2float(row[i]), s);
    out[i] = static_cast<uint8_t>(__nv_cvt_float_to_fp8(v, __NV_SATFINITE, __NV_E4M3));
  }
}

}  // namespace

Status fp8_quantize_per_token(const uint16_t* x, int64_t x_stride, uint8_t* q, int64_t q_stride, float* scale, int m,
                              int k, cudaStream_t stream) {
  if (m == 0) return Status::ok();
  if (m < 0 || k <= 0)
    return invalid_argument("fp8_quantize_per_token: bad shape m=" + std::to_string(m) + " k=" + std::to_string(k));
  if (x_stride < k || q_stride < k) return invalid_argument("fp8_quantize_per_token: row stride smaller than k");
  const bool vector_rows = k % 8 == 0 && k <= kVecRowMax && x_stride % 8 == 0 && q_stride % 8 == 0 &&
                           reinterpret_cast<uintptr_t>(x) % 16 == 0 && reinterpret_cast<uintptr_t>(q) % 8 == 0;
  if (vector_rows) {
    fp8_quantize_per_token_vec_kernel<<<m, kThreads, 0, stream>>>(reinterpret_cast<const __half*>(x), x_stride, q,
                                                                  q_stride, scale, k);
  } else {
    fp8_quantize_per_token_kernel<<<m, kThreads, 0, stream>>>(reinterpret_cast<const __half*>(x), x_stride, q, q_stride,
                                                              scale, k);
  }
  return last_launch_status("fp8_quantize_per_token launch");
}

}  // namespace crosspoint::cuda
