// Per-token-group FP8 quantisation. Rows aligned for 16-byte loads: eight values a lane, a
// group of 128 on a half warp, each block a slice of one token's row with every load issued
// before the first use. Other rows: one warp per (token, group), every 32nd value a lane. Same
// arithmetic per value either way, so the same bits.
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cstdint>
#include <string>

#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/fp8_block_quant.h"
#include "kernels/cuda/fp8_row_quant.cuh"
#include "kernels/cuda/programmatic_launch.cuh"

namespace crosspoint::cuda {
namespace {

constexpr float kAmaxFloor = 1e-10f;  // kernels/fp8_block.h's kFp8BlockAmaxFloor

constexpr int kSliceThreads = 256;
constexpr int kVecPerThread = 2;                           // 16-byte vectors a thread
constexpr int kSliceVecs = kSliceThreads * kVecPerThread;  // 512 vectors = 4,096 values a block
constexpr int kLanesPerGroup = kFp8BlockGroup / 8;         // 16: a half warp
static_assert(kSliceThreads % kLanesPerGroup == 0, "each half warp's vectors stay in one group");

// grid = (ceil(k / 8 / kSliceVecs), m); x 16-byte and q 8-byte aligned, strides multiples of 8.
__global__ void __launch_bounds__(kSliceThreads)
    fp8_quantize_group_slices_kernel(const __half* __restrict__ x, int64_t x_stride, uint8_t* __restrict__ q,
                                     int64_t q_stride, float* __restrict__ scale, int64_t scale_stride, int k) {
  wait_for_prior_kernels();
  allow_dependent_launch();
  const int token = blockIdx.y;
  const uint4* row = reinterpret_cast<const uint4*>(x + token * x_stride);
  uint2* out = reinterpret_cast<uint2*>(q + token * q_stride);
  const int num_vec = k / 8;  // a multiple of 16: a half warp either has a whole group or none
  const int first = blockIdx.x * kSliceVecs + threadIdx.x;
  const unsigned half_warp = 0xffffu << (threadIdx.x & 16);
  uint4 v[kVecPerThread];
#pragma unroll
  for (int i = 0; i < kVecPerThread; ++i) {
    const int idx = first + i * kSliceThreads;
    if (idx < num_vec) v[i] = row[idx];
  }
#pragma unroll
  for (int i = 0; i < kVecPerThread; ++i) {
    const int idx = first + i * kSliceThreads;
    if (idx >= num_vec) break;  // the same for the whole half warp
    float amax = fp8_amax8(v[i], 0.f);
#pragma unroll
    for (int offset = kLanesPerGroup / 2; offset > 0; offset /= 2)
      amax = fmaxf(amax, __shfl_xor_sync(half_warp, amax, offset));
    const float s = __fdiv_rn(fmaxf(amax, kAmaxFloor), kFp8E4M3Max);
    if (idx % kLanesPerGroup == 0) scale[idx / kLanesPerGroup * scale_stride + token] = s;
    out[idx] = fp8_quantize8(v[i], s);
  }
}

constexpr int kWarpsPerBlock = 4;
constexpr int kValuesPerLane = kFp8BlockGroup / 32;

// grid = (ceil(groups / kWarpsPerBlock), m); warp w of block (bx, t) takes group bx * 4 + w of token t.
__global__ void __launch_bounds__(kWarpsPerBlock * 32)
    fp8_quantize_per_token_group_kernel(const __half* __restrict__ x, int64_t x_stride, uint8_t* __restrict__ q,
                                        int64_t q_stride, float* __restrict__ scale, int64_t scale_stride, int groups) {
  wait_for_prior_kernels();
  allow_dependent_launch();
  const int lane = threadIdx.x % 32;
  const int group = blockIdx.x * kWarpsPerBlock + threadIdx.x / 32;
  const int token = blockIdx.y;
  if (group >= groups) return;
  const __half* in = x + token * x_stride + group * kFp8BlockGroup;
  uint8_t* out = q + token * q_stride + group * kFp8BlockGroup;
  float amax = 0.f;
  float v[kValuesPerLane];
#pragma unroll
  for (int j = 0; j < kValuesPerLane; ++j) {
    v[j] = __half2float(in[lane + 32 * j]);
    amax = fmaxf(amax, fabsf(v[j]));
  }
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, offset));
  const float s = __fdiv_rn(fmaxf(amax, kAmaxFloor), kFp8E4M3Max);
  if (lane == 0) scale[group * scale_stride + token] = s;
#pragma unroll
  for (int j = 0; j < kValuesPerLane; ++j) out[lane + 32 * j] = static_cast<uint8_t>(fp8_quantize_value(v[j], s));
}

}  // namespace

Status fp8_quantize_per_token_group(const uint16_t* x, int64_t x_stride, uint8_t* q, int64_t q_stride, float* scale,
                                    int64_t scale_stride, int m, int k, cudaStream_t stream) {
  if (m == 0) return Status::ok();
  if (m < 0 || k <= 0 || k % kFp8BlockGroup != 0) {
    return unsupported("fp8_quantize_per_token_group: k = " + std::to_string(k) + " is not a positive multiple of " +
                       std::to_string(kFp8BlockGroup) + " (m = " + std::to_string(m) + ")");
  }
  if (x_stride < k || q_stride < k) return invalid_argument("fp8_quantize_per_token_group: row stride smaller than k");
  if (m > 65535) return invalid_argument("fp8_quantize_per_token_group: m = " + std::to_string(m) + " is over 65535");
  if (scale_stride < m) return invalid_argument("fp8_quantize_per_token_group: scale_stride smaller than m");
  const auto* xh = reinterpret_cast<const __half*>(x);
  const bool vector_rows = reinterpret_cast<uintptr_t>(x) % 16 == 0 && x_stride % 8 == 0 &&
                           reinterpret_cast<uintptr_t>(q) % 8 == 0 && q_stride % 8 == 0;
  if (vector_rows) {
    const dim3 grid((k / 8 + kSliceVecs - 1) / kSliceVecs, m);
    CROSSPOINT_CUDA_RETURN_IF_ERROR(launch_programmatic(fp8_quantize_group_slices_kernel, grid, dim3(kSliceThreads), 0,
                                                        stream, xh, x_stride, q, q_stride, scale, scale_stride, k),
                                    "fp8_quantize_per_token_group launch");
  } else {
    const int groups = k / kFp8BlockGroup;
    const dim3 grid((groups + kWarpsPerBlock - 1) / kWarpsPerBlock, m);
    CROSSPOINT_CUDA_RETURN_IF_ERROR(
        launch_programmatic(fp8_quantize_per_token_group_kernel, grid, dim3(kWarpsPerBlock * 32), 0, stream, xh,
                            x_stride, q, q_stride, scale, scale_stride, groups),
        "fp8_quantize_per_token_group launch");
  }
  return last_launch_status("fp8_quantize_per_token_group launch");
}

}  // namespace crosspoint::cuda
