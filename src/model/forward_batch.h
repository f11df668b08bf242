// The input of one model step: a flat batch of tokens from several sequences (prefill
// chunks and decodes alike), their positions, and where each sequence's K/V lives in the
// paged cache. Built by the runner from the scheduler's BatchPlan; `generate` builds one
// for a single sequence. Plain data, no ownership: the spans point into the caller's
// buffers for the duration of Model::forward.
#pragma once

#include <cstdint>
#include <span>

namespace crosspoint {

struct ForwardBatch {
  // [num_tokens] token ids of this step, sequence after sequence.
  std::span<const int32_t> token_ids;
  // [num_tokens] absolute position of each token in its sequence (RoPE and causal mask).
  std::span<const int32_t> positions;
  // [num_seqs + 1] token_ids[seq_token_start[s] .. seq_token_start[s+1]) belong to sequence s.
  std::span<const int32_t> seq_token_start;
  // [num_seqs] tokens in sequence s's KV cache after this step (cached + new); the new
  // tokens are the last seq_token_start[s+1] - seq_token_start[s] of them.
  std::span<const int32_t> seq_context_len;
  // [num_seqs, max_blocks_per_seq] physical KV block of each logical block; row s is valid
  // for its first ceil(seq_context_len[s] / block_size) entries.
  std::span<const int32_t> block_tables;
  int32_t max_blocks_per_seq = 0;
  // [num_logits] indices into token_ids whose logits are wanted (usually the last token of
  // each sequence; every token for perplexity).
  std::span<const int32_t> logits_token_idx;

  int32_t num_tokens() const { return static_cast<int32_t>(token_ids.size()); }
  int32_t num_seqs() const { return static_cast<int32_t>(seq_context_len.size()); }
};

}  // namespace crosspoint
