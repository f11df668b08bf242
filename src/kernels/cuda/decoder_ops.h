// The element-wise and row-wise steps of a Qwen2 / Llama decoder layer on the GPU, around
// the linears (kernels/cuda/linear.h, w4a16_gemm.h) and attention (kernels/cuda/paged_attention.h).
// Activations are 16-bit (uint16_t bits): fp16, or bf16 where a launcher's `dtype` says so (a
// bf16 checkpoint served in bf16; the fp8 outputs need fp16); "fp16" below means either. The
// residual stream is fp32 so that 28+ layers of additions do not lose precision; norm weights
// and the embedding table are in the activations' dtype (converted at load).
//
// One step of the CUDA model, T tokens, d hidden, H query heads, Hkv KV heads, D head dim:
//   embedding_gather                 residual [T, d] f32 = embed[token]
//   per layer:
//     add_rms_norm(delta = o/down)   residual += delta; x = rms_norm(residual) * w   (fp16)
//     qkv = linear(x)                [T, (H + 2 Hkv) D] fp16 (q, k, v concatenated)
//     rope_kv_write                  q, k += bias; rotate q, k; k, v -> paged cache slots
//     paged_attention                [T, H D] fp16
//     o = linear(attn); add_rms_norm; gate_up = linear(x) [T, 2 I]; silu_mul -> [T, I];
//     down = linear(...)
//   add_rms_norm(final norm), gather_rows(logits rows), lm_head linear, argmax_rows.
//
// Every launcher checks its arguments (a Status naming the bad one), never synchronises,
// and is safe to capture in a CUDA graph: grids depend only on the integer arguments.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "common/dtype.h"
#include "common/status.h"

namespace crosspoint::cuda {

// Where a row step also writes its fp16 output quantised per token to e4m3 for the W8A8 linear
// that reads it next: fp8_quant.h's formula on the fp16 values, the same bits as
// fp8_quantize_per_token on the output, without its launch and its second read of the rows.
//   q [T, d] e4m3 (row stride q_stride bytes)   scale [T] f32
struct Fp8Rows {
  uint8_t* q = nullptr;
  int64_t q_stride = 0;
  float* scale = nullptr;
  bool wanted() const { return q != nullptr; }
};

// residual[t, :] = float(table[token_ids[t], :]).
//   table      [vocab, d] fp16     token_ids [T] int32 in [0, vocab) (device)
//   residual   [T, d] f32
Status embedding_gather(const uint16_t* table, const int32_t* token_ids, float* residual, int num_tokens,
                        int hidden_size, int vocab_size, cudaStream_t stream, DType dtype = DType::kF16);

// When delta != nullptr: residual[t, :] += float(delta[t, :]) (stored back, f32).
// Then out[t, :] = fp16(residual[t, :] * rsqrt(mean(residual[t, :]^2) + eps) * weight).
//   residual [T, d] f32 (in/out)   delta [T, d] fp16 (row stride delta_stride) or nullptr
//   weight   [d] fp16              out   [T, d] fp16 (row stride out_stride)
// weight is a model weight: it may be read before the programmatic wait
// (programmatic_launch.cuh), so no kernel of the same step may write it. With fp8 wanted, out
// is also written to fp8 (Fp8Rows).
Status add_rms_norm(float* residual, const uint16_t* delta, int64_t delta_stride, const uint16_t* weight, float eps,
                    uint16_t* out, int64_t out_stride, int num_tokens, int hidden_size, cudaStream_t stream,
                    const Fp8Rows& fp8 = {}, DType dtype = DType::kF16);

// Positional and cache step of attention, in one pass over the fused qkv rows:
//   qkv[t] = [q (H*D) | k (Hkv*D) | v (Hkv*D)] fp16, row stride qkv_stride elements.
//   bias    [(H + 2 Hkv) * D] fp16 or nullptr (Qwen2 has q/k/v biases), added first.
//   q: rotated in place (HF "rotate half" RoPE at positions[t], inv_freq [D/2] f32 device).
//   k: rotated, then stored with v in the paged cache at slot_mapping[t]
//      (= physical_block * block_size + offset; -1 means "don't store": padding rows).
//   key_cache / value_cache: one layer's [num_blocks, block_size, Hkv, D] fp16; or, for an fp8
//   cache, key_cache_fp8 / value_cache_fp8 in e4m3 bytes, stored as e4m3(x / k_scale or
//   v_scale) from the fp32 value (exactly one pair is set).
struct RopeKvWriteArgs {
  uint16_t* qkv = nullptr;
  int64_t qkv_stride = 0;
  const uint16_t* bias = nullptr;
  const int32_t* positions = nullptr;     // [T] device
  const float* inv_freq = nullptr;        // [D/2] device
  const int32_t* slot_mapping = nullptr;  // [T] device
  uint16_t* key_cache = nullptr;
  uint16_t* value_cache = nullptr;
  uint8_t* key_cache_fp8 = nullptr;
  uint8_t* value_cache_fp8 = nullptr;
  float k_scale = 1.0f;
  float v_scale = 1.0f;
  int num_tokens = 0;
  int num_heads = 0;
  int num_kv_heads = 0;
  int head_dim = 0;  // even, <= 256
  int block_size = 0;
  int num_blocks = 0;
  float attention_scaling = 1.0f;  // cos and sin are multiplied by it (YaRN's attention factor)
  DType dtype = DType::kF16;       // of qkv, bias and the 16-bit cache (an fp8 cache needs kF16)
};
Status rope_kv_write(const RopeKvWriteArgs& args, cudaStream_t stream);

// out[t, i] = silu(gate_up[t, i]) * gate_up[t, I + i], i < I (gate and up fused, gate first).
//   gate_up [T, 2I] fp16 (row stride in_stride)   out [T, I] fp16 (row stride out_stride)
// With fp8 wanted the result goes to fp8 (Fp8Rows) and out is only scratch: on Hopper, rows that
// fit one cluster's registers never reach it, so its contents are unspecified afterwards.
Status silu_mul(const uint16_t* gate_up, int64_t in_stride, uint16_t* out, int64_t out_stride, int num_tokens,
                int intermediate_size, cudaStream_t stream, const Fp8Rows& fp8 = {}, DType dtype = DType::kF16);

// out[r, :] = in[rows[r], :]   in [*, width] fp16 (row stride in_stride), rows [R] int32 device,
// out [R, width] fp16 dense.
Status gather_rows(const uint16_t* in, int64_t in_stride, const int32_t* rows, uint16_t* out, int num_rows, int width,
                   cudaStream_t stream);

// token[r] = argmax_v logits[r, v] (lowest index on ties, NaN never wins), r < R.
//   logits [R, V] fp16 (row stride stride)   token [R] int32 device
Status argmax_rows(const uint16_t* logits, int64_t stride, int32_t* token, int num_rows, int vocab_size,
                   cudaStream_t stream, DType dtype = DType::kF16);

}  // namespace crosspoint::cuda
