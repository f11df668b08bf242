// W8A8-INT8 activation quantisation on the GPU, bit for bit what kernels/int8.h specifies (and
// vLLM's dynamic_scaled_int8_quant / static_scaled_int8_quant compute), from fp16 activations:
//   per token   amax[m] = max_k |x[m, k]|,  scale[m] = amax[m] / 127,
//               q[m, k] = clamp(rint(x[m, k] * (127 / amax[m])), -128, 127)   (0 where amax is 0)
//   static      scale[m] = s,  q[m, k] = clamp(rint(x[m, k] / s), -128, 127)
// Every division is IEEE fp32 (also under fast math), rounding is to nearest even, a NaN input
// gives 0 and an infinite one saturates, as the host reference's fp16 clamp makes it.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "common/status.h"

namespace crosspoint::cuda {

//   x      [M, K] fp16, row stride x_stride elements
//   q      [M, K] int8, row stride q_stride bytes
//   scale  [M] fp32
Status int8_quantize_per_token(const uint16_t* x, int64_t x_stride, int8_t* q, int64_t q_stride, float* scale, int m,
                               int k, cudaStream_t stream);

// The same with one static activation scale (a device f32): scale[m] = *static_scale, so the GEMM
// epilogue runs unchanged.
Status int8_quantize_static(const uint16_t* x, int64_t x_stride, int8_t* q, int64_t q_stride, float* scale,
                            const float* static_scale, int m, int k, cudaStream_t stream);

}  // namespace crosspoint::cuda
