// Hand-written small-batch GEMV for weights stored [N, K] row-major (HF nn.Linear layout),
// for decode steps with few tokens, where the weight read is the whole cost:
//   fp16:  y[m, n] = sum_k x[m, k] * w[n, k]
//   fp8:   y[m, n] = x_scale[m] * w_scale[n] * sum_k xq[m, k] * wq[n, k]   (W8A8, e4m3)
// fp32 accumulation, fp16 output. One warp per output column pair streams the weight rows
// with 16-byte loads; activations come from L1/L2. Supports 1 <= m <= kGemvMaxRows.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "common/status.h"

namespace crosspoint::cuda {

inline constexpr int kGemvMaxRows = 8;

//   x [M, K] fp16 (row stride x_stride), w [N, K] fp16 (row stride w_stride),
//   y [M, N] fp16 (row stride y_stride). K % 8 == 0; strides multiples of 8 elements.
Status fp16_gemv(const uint16_t* x, int64_t x_stride, const uint16_t* w, int64_t w_stride,
                 uint16_t* y, int64_t y_stride, int m, int n, int k, cudaStream_t stream);

//   xq [M, K] e4m3 (row stride xq_stride bytes), x_scale [M] fp32,
//   wq [N, K] e4m3 (row stride w_stride bytes), w_scale [N] fp32,
//   y [M, N] fp16. K % 16 == 0; strides multiples of 16 bytes.
Status fp8_gemv(const uint8_t* xq, int64_t xq_stride, const float* x_scale, const uint8_t* wq,
                int64_t w_stride, const float* w_scale, uint16_t* y, int64_t y_stride, int m,
                int n, int k, cudaStream_t stream);

}  // namespace crosspoint::cuda
