// Per-token-group FP8 quantisation: one warp per (token, group of 128), four values a lane:
// four consecutive ones (an 8-byte load, a 4-byte store) where the rows are aligned for it, else
// every 32nd. Same arithmetic per value either way, so the same bits.
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

constexpr int kWarpsPerBlock = 4;
constexpr int kValuesPerLane = kFp8BlockGroup / 32;
static_assert(kValuesPerLane == 4, "the vector path moves four values a lane");
constexpr float kAmaxFloor = 1e-10f;  // kernels/fp8_block.h's kFp8BlockAmaxFloor

// grid = (ceil(groups / kWarpsPerBlock), m); warp w of block (bx, t) takes group bx * 4 + w of token t.
template <bool kVector>
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
  uint2 packed;  // kVector: the lane's four values
  float v[kValuesPerLane];
  if constexpr (kVector) {
    packed = reinterpret_cast<const uint2*>(in)[lane];
    amax = fp8_amax4(packed, amax);
  } else {
#pragma unroll
    for (int j = 0; j < kValuesPerLane; ++j) {
      v[j] = __half2float(in[lane + 32 * j]);
      amax = fmaxf(amax, fabsf(v[j]));
    }
  }
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, offset));
  const float s = __fdiv_rn(fmaxf(amax, kAmaxFloor), kFp8E4M3Max);
  if (lane == 0) scale[group * scale_stride + token] = s;
  if constexpr (kVector) {
    reinterpret_cast<uint32_t*>(out)[lane] = fp8_quantize4(packed, s);
  } else {
#pragma unroll
    for (int j = 0; j < kValuesPerLane; ++j) out[lane + 32 * j] = static_cast<uint8_t>(fp8_quantize_value(v[j], s));
  }
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
  const int groups = k / kFp8BlockGroup;
  const dim3 grid((groups + kWarpsPerBlock - 1) / kWarpsPerBlock, m);
  const bool vector = reinterpret_cast<uintptr_t>(x) % 8 == 0 && x_stride % 4 == 0 &&
                      reinterpret_cast<uintptr_t>(q) % 4 == 0 && q_stride % 4 == 0;
  CROSSPOINT_CUDA_RETURN_IF_ERROR(
      launch_programmatic(
          vector ? fp8_quantize_per_token_group_kernel<true> : fp8_quantize_per_token_group_kernel<false>, grid,
          dim3(kWarpsPerBlock * 32), 0, stream, reinterpret_cast<const __half*>(x), x_stride, q, q_stride, scale,
          scale_stride, groups),
      "fp8_quantize_per_token_group launch");
  return last_launch_status("fp8_quantize_per_token_group launch");
}

}  // namespace crosspoint::cuda
