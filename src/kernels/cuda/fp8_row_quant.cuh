// Device pieces of per-token FP8 quantisation (fp8_quant.h's formula) for
// fp8_quantize_per_token, kept apart so that any kernel quantising a row gives the same bits:
// amax over the fp16 values, an IEEE division for the scale and for each value, the hardware
// e4m3 conversion with satfinite.
#pragma once

#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cstdint>

#include "kernels/cuda/fp8_quant.h"

namespace crosspoint::cuda {

// Largest |value| of the eight fp16 values in v, folded into amax.
__device__ __forceinline__ float fp8_amax8(uint4 v, float amax) {
  const __half2* h = reinterpret_cast<const __half2*>(&v);
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const float2 f = __half22float2(__habs2(h[j]));
    amax = fmaxf(amax, fmaxf(f.x, f.y));
  }
  return amax;
}

// Largest |value| of the four fp16 values in v (two half2), folded into amax.
__device__ __forceinline__ float fp8_amax4(uint2 v, float amax) {
  const float2 lo = __half22float2(__habs2(*reinterpret_cast<const __half2*>(&v.x)));
  const float2 hi = __half22float2(__habs2(*reinterpret_cast<const __half2*>(&v.y)));
  return fmaxf(amax, fmaxf(fmaxf(lo.x, lo.y), fmaxf(hi.x, hi.y)));
}

// The row scale from the row's amax; IEEE division even under fast math.
__device__ __forceinline__ float fp8_row_scale(float amax) { return fmaxf(__fdiv_rn(amax, kFp8E4M3Max), kFp8MinScale); }

// Block-wide amax of kThreads threads → every thread gets the row scale; thread 0 stores it.
template <int kThreads>
__device__ __forceinline__ float fp8_block_row_scale(float amax, float* scale_out) {
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, offset));
  __shared__ float warp_amax[kThreads / 32];
  __shared__ float row_scale;
  if (threadIdx.x % 32 == 0) warp_amax[threadIdx.x / 32] = amax;
  __syncthreads();
  if (threadIdx.x == 0) {
    float a = 0.f;
    for (int w = 0; w < kThreads / 32; ++w) a = fmaxf(a, warp_amax[w]);
    row_scale = fp8_row_scale(a);
    *scale_out = row_scale;
  }
  __syncthreads();
  return row_scale;
}

__device__ __forceinline__ uint32_t fp8_quantize_value(float v, float s) {
  return __nv_cvt_float_to_fp8(__fdiv_rn(v, s), __NV_SATFINITE, __NV_E4M3);
}

// Two fp16 values → two e4m3 bytes (low byte first).
__device__ __forceinline__ uint32_t fp8_quantize_pair(__half2 pair, float s) {
  const float2 f = __half22float2(pair);
  return fp8_quantize_value(f.x, s) | fp8_quantize_value(f.y, s) << 8;
}

// Eight fp16 values → eight e4m3 bytes.
__device__ __forceinline__ uint2 fp8_quantize8(uint4 v, float s) {
  const __half2* h = reinterpret_cast<const __half2*>(&v);
  uint2 packed;
  packed.x = fp8_quantize_pair(h[0], s) | fp8_quantize_pair(h[1], s) << 16;
  packed.y = fp8_quantize_pair(h[2], s) | fp8_quantize_pair(h[3], s) << 16;
  return packed;
}

// Four fp16 values (two half2 in a uint2) → four e4m3 bytes.
__device__ __forceinline__ uint32_t fp8_quantize4(uint2 v, float s) {
  return fp8_quantize_pair(*reinterpret_cast<const __half2*>(&v.x), s) |
         fp8_quantize_pair(*reinterpret_cast<const __half2*>(&v.y), s) << 16;
}

}  // namespace crosspoint::cuda
