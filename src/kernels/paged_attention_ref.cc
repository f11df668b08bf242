#include <cmath>
#include <string>
#include <vector>

#include "kernels/paged_attention.h"
#include "kernels/softmax.h"

namespace crosspoint {

Status validate_paged_kv_layout(const PagedKvLayout& l, int32_t num_tokens) {
  if (l.block_size <= 0 || l.num_kv_heads <= 0 || l.head_dim <= 0 || l.num_blocks <= 0 || l.num_seqs < 0)
    return invalid_argument("paged kv: block_size, num_kv_heads, head_dim and num_blocks must be positive");
  if (!l.key_cache || !l.value_cache || !l.seq_token_start ||
      (l.num_seqs > 0 && (!l.seq_context_len || !l.block_tables)))
    return invalid_argument("paged kv: null cache or table pointer");
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
          const float* k = l.key_cache + cache_offset(l, s, p, h / group);
          double dot = 0.0;
          for (int32_t d = 0; d < l.head_dim; ++d) dot += static_cast<double>(q[d]) * k[d];
          scores[p] = static_cast<float>(dot * a.scale);
        }
        CROSSPOINT_RETURN_IF_ERROR(softmax_ref(scores.data(), 1, visible));
        float* out = a.output + (int64_t{t} * a.num_heads + h) * l.head_dim;
        for (int32_t d = 0; d < l.head_dim; ++d) {
          double sum = 0.0;
          for (int32_t p = 0; p < visible; ++p)
            sum += scores[p] * static_cast<double>(l.value_cache[cache_offset(l, s, p, h / group) + d]);
          out[d] = static_cast<float>(sum);
        }
      }
    }
  }
  return Status::ok();
}

}  // namespace crosspoint
