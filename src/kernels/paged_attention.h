// Attention over a paged KV cache, for prefill chunks and decodes in one flat batch.
//
// Cache layout (per layer, K and V alike): [num_blocks, block_size, num_kv_heads, head_dim]
// f32, or e4m3 bytes with a per-tensor scale (PagedKvLayout::key_cache_fp8). Sequence s holds seq_context_len[s] tokens
// (cached + new); token position p lives in physical block block_tables[s * max_blocks_per_seq + p / block_size], slot
// p % block_size. Its new tokens are query rows seq_token_start[s] .. seq_token_start[s+1]; new token j of n_new sits
// at position seq_context_len[s] - n_new + j and attends causally to positions 0 ..= that one. GQA: query head h reads
// KV head h / (num_heads / num_kv_heads).
#pragma once

#include <cstdint>

#include "common/status.h"

namespace crosspoint {

struct PagedKvLayout {
  float* key_cache = nullptr;    // [num_blocks, block_size, num_kv_heads, head_dim] f32
  float* value_cache = nullptr;  // [num_blocks, block_size, num_kv_heads, head_dim] f32
  int32_t num_blocks = 0;
  int32_t block_size = 0;  // tokens per block
  int32_t num_kv_heads = 0;
  int32_t head_dim = 0;
  const int32_t* block_tables = nullptr;  // [num_seqs, max_blocks_per_seq] physical block ids
  int32_t max_blocks_per_seq = 0;
  const int32_t* seq_token_start = nullptr;  // [num_seqs + 1] new-token ranges, ascending
  const int32_t* seq_context_len = nullptr;  // [num_seqs] tokens in cache after this step
  int32_t num_seqs = 0;
  // An fp8 cache (--kv-cache-dtype fp8) instead: the same layout in e4m3 bytes, with one scale
  // per tensor as vLLM keeps it: stored = e4m3(fp16(x) / scale), read = e4m3 * scale (x first
  // rounded to the fp16 value the GPU and vLLM hold: round_to_f16_saturated of kernels/fp8.h). Exactly one of
  // the two pairs is set.
  uint8_t* key_cache_fp8 = nullptr;
  uint8_t* value_cache_fp8 = nullptr;
  float k_scale = 1.0f;
  float v_scale = 1.0f;
};

// Checks the tables against each other: starts ascending from 0, every context at least as
// long as its new tokens, every block id in [0, num_blocks), enough table columns.
// num_tokens is seq_token_start[num_seqs].
Status validate_paged_kv_layout(const PagedKvLayout& layout, int32_t num_tokens);

// Stores K and V of the new tokens into their cache slots (quantised to e4m3 for an fp8 cache).
struct KvCacheWriteArgs {
  const float* key = nullptr;    // [num_tokens, num_kv_heads, head_dim] f32, rows key_row_stride apart
  const float* value = nullptr;  // [num_tokens, num_kv_heads, head_dim] f32, rows value_row_stride apart
  int64_t key_row_stride = 0;    // elements; 0 means num_kv_heads * head_dim
  int64_t value_row_stride = 0;
  PagedKvLayout layout;
};
Status kv_cache_write(const KvCacheWriteArgs& args);

struct PagedAttentionArgs {
  const float* query = nullptr;  // [num_tokens, num_heads, head_dim] f32, rows query_row_stride apart
  int64_t query_row_stride = 0;  // elements; 0 means num_heads * head_dim
  float* output = nullptr;       // [num_tokens, num_heads, head_dim] f32, dense
  int32_t num_heads = 0;
  float scale = 0.0f;  // usually 1 / sqrt(head_dim)
  PagedKvLayout layout;
};

// Fast version: one work item per (token, KV head) spread over the thread pool, each cached
// row read once for the query heads that share it; scores over the whole visible context,
// softmax, then a weighted sum of V rows (AVX2 dots/axpys).
Status paged_attention(const PagedAttentionArgs& args);
// Plain reference: gathers each sequence's K/V contiguously, then textbook softmax(QKᵀ)V.
Status paged_attention_ref(const PagedAttentionArgs& args);

}  // namespace crosspoint
