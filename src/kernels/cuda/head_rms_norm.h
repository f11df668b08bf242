// Qwen3's per-head RMSNorm of q and k, in place in the fused qkv rows before RoPE:
//   x <- x / sqrt(mean(x^2) + eps) * weight   over each head's head_dim values,
// with q_weight for the num_q_heads q heads and k_weight for the num_kv_heads k heads that
// follow them in each row; the v heads after them are not touched. fp32 math, fp16 (or bf16: dtype) in and out.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "common/dtype.h"
#include "common/status.h"

namespace crosspoint::cuda {

//   qkv       [T, row_stride] fp16, q heads then k heads (then v) of head_dim each
//   q_weight  [head_dim] fp16, k_weight [head_dim] fp16
// head_dim even and <= 256; launches only, graph-capturable, one warp per (row, head):
// the same bits whatever else is in the batch.
Status qk_head_rms_norm(uint16_t* qkv, int64_t row_stride, int num_tokens, int num_q_heads, int num_kv_heads,
                        int head_dim, const uint16_t* q_weight, const uint16_t* k_weight, float eps,
                        cudaStream_t stream, DType dtype = DType::kF16);

}  // namespace crosspoint::cuda
