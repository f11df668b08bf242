// Per-token-group FP8 (e4m3) activation quantisation for block-wise FP8 linears, bit for bit
// kernels/fp8_block.h's formula (vLLM's per_token_group_quant_fp8) on fp16 activations:
//   s[t, g]  = max(max_{k in g} |x[t, k]|, 1e-10) / 448        fp32, IEEE division
//   q[t, k]  = e4m3(x[t, k] / s[t, g])   round to nearest even, saturated to +-448
// with groups of kFp8BlockGroup (128) inputs. The scales are written group-major, the tokens of
// one group contiguous (scale[g * scale_stride + t]): the layout cuBLASLt's 1 x 128 block scales
// take for the activation operand (cublaslt_gemm.h, fp8_block_gemm_cublaslt), whose token count
// (the stride) must be a multiple of 4.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "common/status.h"

namespace crosspoint::cuda {

inline constexpr int kFp8BlockGroup = 128;

//   x      [M, K] fp16, row stride x_stride elements; K a multiple of 128
//   q      [M, K] e4m3 bytes, row stride q_stride bytes
//   scale  [K / 128, scale_stride] fp32 (group-major), scale_stride >= M
Status fp8_quantize_per_token_group(const uint16_t* x, int64_t x_stride, uint8_t* q, int64_t q_stride, float* scale,
                                    int64_t scale_stride, int m, int k, cudaStream_t stream);

}  // namespace crosspoint::cuda
