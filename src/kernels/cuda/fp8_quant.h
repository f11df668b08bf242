// Per-token dynamic FP8 (e4m3) activation quantisation, as W8A8-FP8 checkpoints
// (compressed-tensors "FP8-dynamic") expect at run time:
//   scale[m] = max(amax_k |x[m, k]| / 448, 1 / (448 * 512))      fp32
//   q[m, k]  = e4m3(x[m, k] / scale[m])  round to nearest even, saturated to +-448
// x / scale is an IEEE fp32 division (not a multiply by 1/scale), so results are bit-exact
// against a host reference doing the same.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "common/status.h"

namespace crosspoint::cuda {

inline constexpr float kFp8E4M3Max = 448.0f;
inline constexpr float kFp8MinScale = 1.0f / (448.0f * 512.0f);

//   x      [M, K] fp16, row stride x_stride elements
//   q      [M, K] e4m3 bytes, row stride q_stride bytes
//   scale  [M] fp32
Status fp8_quantize_per_token(const uint16_t* x, int64_t x_stride, uint8_t* q, int64_t q_stride, float* scale, int m,
                              int k, cudaStream_t stream);

// The same with a static activation scale (checkpoints with a calibrated input_scale):
//   q[m, k] = e4m3(x[m, k] / *static_scale), scale[m] = *static_scale (so the GEMM's per-row
//   epilogue runs unchanged). static_scale is one f32 on the device.
Status fp8_quantize_static(const uint16_t* x, int64_t x_stride, uint8_t* q, int64_t q_stride, float* scale,
                           const float* static_scale, int m, int k, cudaStream_t stream);

}  // namespace crosspoint::cuda
