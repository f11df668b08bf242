#include <cmath>
#include <string>
#include <vector>

#include "kernels/fp8.h"
#include "kernels/paged_attention.h"
#include "kernels/softmax.h"

namespace crosspoint {

Status validate_paged_kv_layout(const PagedKvLayout& l, int32_t num_tokens) {
  if (l.block_size <= 0 || l.num_kv_heads <= 0 || l.head_dim <= 0 || l.num_blocks <= 0 || l.num_seqs < 0)
    return invalid_argument("paged kv: block_size, num_kv_heads, head_dim and num_blocks must be positive");
  const bool f32 = l.key_cache != nullptr && l.value_cache != nullptr;
  const bool fp8 = l.key_cache_fp8 != nullptr && l.value_cache_fp8 != nullptr;
  if (f32 == fp8) return invalid_argument("paged kv: give the f32 cache pair or the fp8 pair, exactly one");
  if (fp8 && !(l.k_scale > 0 && l.v_scale > 0 && std::isfinite(l.k_scale) && std::isfinite(l.v_scale)))
    return invalid_argument("paged kv: the fp8 cache's k_scale and v_scale must be positive and finite");
  if (!l.seq_token_start || (l.num_seqs > 0 && (!l.seq_context_len || !l.block_tables)))
    return invalid_argument("paged kv: null table pointer");
  if (l.seq_token_start[0] != 0) return invalid_argument("paged kv: seq_token_start[0] must be 0");
  for (int32_t s = 0; s < l.num_seqs; ++s) {
    const int32_t num_new = l.seq_token_start[s + 1] - l.seq_token_start[s];
    const std::string seq = "sequence " + std::to_string(s);
    if (num_new < 0) return invalid_argument("paged kv: seq_token_start is not ascending at " + seq);
    if (l.seq_context_len[s] < num_new)
      return invalid_argument("paged kv: " + seq + " context " + std::to_string(l.seq_context_len[s]) +
                              " is shorter than its " + std::to_string(num_new) + " new tokens");
    const int32_t num_blocks_used = (l.seq_context_len[s] + l.block_size - 1) / l.block_size;
    if (num_blocks_used > l.max_blocks_per_seq)
      return invalid_argument("paged kv: " + seq + " needs " + std::to_string(num_blocks_used) +
                              " blocks but the block table has " + std::to_string(l.max_blocks_per_seq) + " columns");
    for (int32_t b = 0; b < num_blocks_used; ++b) {
      const int32_t block = l.block_tables[static_cast<int64_t>(s) * l.max_blocks_per_seq + b];
      if (block < 0 || block >= l.num_blocks)
        return invalid_argument("paged kv: " + seq + " block table entry " + std::to_string(b) + " = " +
                                std::to_string(block) + " is outside [0, " + std::to_string(l.num_blocks) + ")");
    }
  }
  if (l.seq_token_start[l.num_seqs] != num_tokens)
    return invalid_argument("paged kv: seq_token_start ends at " + std::to_string(l.seq_token_start[l.num_seqs]) +
                            " but the batch has " + std::to_string(num_tokens) + " tokens");
  return Status::ok();
}

namespace {

// Offset of (position, kv_head) of sequence s in a cache array.
int64_t cache_offset(const PagedKvLayout& l, int32_t s, int32_t position, int32_t kv_head) {
  const int32_t block = l.block_tables[static_cast<int64_t>(s) * l.max_blocks_per_seq + position / l.block_size];
  const int64_t slot = static_cast<int64_t>(block) * l.block_size + position % l.block_size;
  return (slot * l.num_kv_heads + kv_head) * l.head_dim;
}

// One cached K or V element, dequantised for an fp8 cache.
float key_at(const PagedKvLayout& l, int64_t offset) {
  return l.key_cache != nullptr ? l.key_cache[offset] : e4m3_to_f32(l.key_cache_fp8[offset]) * l.k_scale;
}
float value_at(const PagedKvLayout& l, int64_t offset) {
  return l.value_cache != nullptr ? l.value_cache[offset] : e4m3_to_f32(l.value_cache_fp8[offset]) * l.v_scale;
}

}  // namespace

Status paged_attention_ref(const PagedAttentionArgs& a) {
  const PagedKvLayout& l = a.layout;
  if (a.num_heads <= 0 || a.num_heads % l.num_kv_heads != 0)
    return invalid_argument("paged_attention: num_heads must be a positive multiple of num_kv_heads");
  const int32_t num_tokens = l.seq_token_start[l.num_seqs];
  CROSSPOINT_RETURN_IF_ERROR(validate_paged_kv_layout(l, num_tokens));
  const int64_t q_stride = a.query_row_stride ? a.query_row_stride : int64_t{a.num_heads} * l.head_dim;
  const int32_t group = a.num_heads / l.num_kv_heads;
  for (int32_t s = 0; s < l.num_seqs; ++s) {
    const int32_t context = l.seq_context_len[s];
    const int32_t num_new = l.seq_token_start[s + 1] - l.seq_token_start[s];
    for (int32_t j = 0; j < num_new; ++j) {
      const int32_t t = l.seq_token_start[s] + j;
      const int32_t visible = context - num_new + j + 1;  // positions 0 .. visible-1
      for (int32_t h = 0; h < a.num_heads; ++h) {
        const float* q = a.query + t * q_stride + int64_t{h} * l.head_dim;
        std::vector<float> scores(visible);
        for (int32_t p = 0; p < visible; ++p) {
          const int64_t k = cache_offset(l, s, p, h / group);
          double dot = 0.0;
          for (int32_t d = 0; d < l.head_dim; ++d) dot += static_cast<double>(q[d]) * key_at(l, k + d);
          scores[p] = static_cast<float>(dot * a.scale);
        }
        CROSSPOINT_RETURN_IF_ERROR(softmax_ref(scores.data(), 1, visible));
        float* out = a.output + (int64_t{t} * a.num_heads + h) * l.head_dim;
        for (int32_t d = 0; d < l.head_dim; ++d) {
          double sum = 0.0;
          for (int32_t p = 0; p < visible; ++p)
            sum += scores[p] * static_cast<double>(value_at(l, cache_offset(l, s, p, h / group) + d));
          out[d] = static_cast<float>(sum);
        }
      }
    }
  }
  return Status::ok();
}

}  // namespace crosspoint
