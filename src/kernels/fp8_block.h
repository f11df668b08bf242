// Block-wise FP8 (float8_e4m3fn) W8A8 linear, as the official Qwen3 / DeepSeek "-FP8"
// checkpoints (quant_method "fp8", weight_block_size [128, 128]) and compressed-tensors'
// FP8_BLOCK preset run it: one weight scale per block_n x block_k tile, activations quantised
// per token and per group of block_k inputs at run time (vLLM's per_token_group_quant_fp8),
// from their fp16 value as the GPU holds them (kernels/fp8.h explains the fp16 step):
//   h[t, k]       = fp16(clamp(x[t, k], -65504, 65504))
//   s_x[t, g]     = max(max_{k in g} |h[t, k]|, 1e-10) / 448             fp32, g = k / block_k
//   xq[t, k]      = e4m3(h[t, k] / s_x[t, g])       IEEE division, nearest even, saturating
//   y[t, n]       = sum_g s_x[t, g] * s_w[n / block_n, g] * sum_{k in g} xq[t, k] * wq[n, k]  (+ bias)
// Sums within a group run in fp32 (every e4m3 product is exact in fp32); the last group and
// the last row block may be partial.
#pragma once

#include <cstdint>

#include "common/status.h"

namespace crosspoint {

// vLLM's floor on a group's amax (per_token_group_quant_fp8's eps).
inline constexpr float kFp8BlockAmaxFloor = 1e-10f;

struct Fp8BlockLinearArgs {
  const float* x = nullptr;             // [num_rows, in_features] f32, rows x_row_stride apart
  int64_t x_row_stride = 0;             // elements; 0 means in_features
  const uint8_t* weight = nullptr;      // [out_features, in_features] e4m3
  const float* weight_scale = nullptr;  // [ceil(N / block_n), ceil(K / block_k)] f32
  int64_t block_n = 128;
  int64_t block_k = 128;
  const float* bias = nullptr;  // [out_features] f32, or null
  float* y = nullptr;           // [num_rows, out_features] f32
  int64_t num_rows = 0;
  int64_t in_features = 0;
  int64_t out_features = 0;
};

// Quantises x per token and group: xq [num_rows, K] e4m3, x_scale [num_rows, ceil(K / block_k)].
Status fp8_block_quantize_ref(const Fp8BlockLinearArgs& args, uint8_t* xq, float* x_scale);

// Plain reference: the quantisation above, then one dot product per output with double sums.
Status fp8_block_linear_ref(const Fp8BlockLinearArgs& args);
// Threaded: the same quantisation, fp32 sums per group, outputs split over the global pool.
Status fp8_block_linear(const Fp8BlockLinearArgs& args);

Status validate_fp8_block_linear_args(const Fp8BlockLinearArgs& args);

}  // namespace crosspoint
