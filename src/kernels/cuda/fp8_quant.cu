// Per-token FP8 quantisation: one block per row; pass 1 finds amax, pass 2 converts with
// the hardware cvt (satfinite, round-to-nearest-even). Rows are at most a few hundred KB,
// so the second pass reads them from L2.
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <string>

#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/fp8_quant.h"

namespace crosspoint::cuda {
namespace {

constexpr int kThreads = 256;

__global__ void __launch_bounds__(kThreads)
    fp8_quantize_per_token_kernel(const __half* __restrict__ x, int64_t x_stride,
                                  uint8_t* __restrict__ q, int64_t q_stride,
                                  float* __restrict__ scale, int k) {
  const __half* row = x + blockIdx.x * x_stride;
  uint8_t* out = q + blockIdx.x * q_stride;
  float amax = 0.f;
  for (int i = threadIdx.x; i < k; i += kThreads) amax = fmaxf(amax, fabsf(__half2float(row[i])));
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, offset));
  __shared__ float warp_amax[kThreads / 32];
  __shared__ float row_scale;
  if (threadIdx.x % 32 == 0) warp_amax[threadIdx.x / 32] = amax;
  __syncthreads();
  if (threadIdx.x == 0) {
    float a = 0.f;
    for (int w = 0; w < kThreads / 32; ++w) a = fmaxf(a, warp_amax[w]);
    const float s = fmaxf(a / kFp8E4M3Max, kFp8MinScale);
    row_scale = s;
    scale[blockIdx.x] = s;
  }
  __syncthreads();
  const float s = row_scale;
  for (int i = threadIdx.x; i < k; i += kThreads) {
    const float v = __fdiv_rn(__half2float(row[i]), s);
    out[i] = static_cast<uint8_t>(__nv_cvt_float_to_fp8(v, __NV_SATFINITE, __NV_E4M3));
  }
}

}  // namespace

Status fp8_quantize_per_token(const uint16_t* x, int64_t x_stride, uint8_t* q, int64_t q_stride,
                              float* scale, int m, int k, cudaStream_t stream) {
  if (m == 0) return Status::ok();
  if (m < 0 || k <= 0) return invalid_argument("fp8_quantize_per_token: bad shape m=" + std::to_string(m) + " k=" + std::to_string(k));
  if (x_stride < k || q_stride < k) return invalid_argument("fp8_quantize_per_token: row stride smaller than k");
  fp8_quantize_per_token_kernel<<<m, kThreads, 0, stream>>>(reinterpret_cast<const __half*>(x), x_stride, q,
                                                           q_stride, scale, k);
  return last_launch_status("fp8_quantize_per_token launch");
}

}  // namespace crosspoint::cuda
