// The one builder of a ForwardBatch: it owns the host arrays a step reads and appends
// sequences to them. The runner builds every step from its BatchPlan with it, and so do the
// steps the CUDA model and runner make up themselves (profile, graph capture, padded decode),
// perplexity's whole-sequence forwards and the tests.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "model/forward_batch.h"

namespace crosspoint {

enum class LogitsWanted { kNone, kLast, kAll };

class HostForwardBatch {
 public:
  // Empties the batch; every block table row will hold max_blocks_per_seq entries.
  void clear(int32_t max_blocks_per_seq);

  // Appends a sequence computing `tokens` after `num_cached` tokens already in its cache
  // (positions num_cached, num_cached + 1, ...), its K/V in `block_table_row` (at most
  // max_blocks_per_seq block ids; the rest of the row is block 0, never read), with logits
  // for none, the last or all of its new tokens.
  void add_sequence(std::span<const int32_t> tokens, int32_t num_cached, std::span<const int32_t> block_table_row,
                    LogitsWanted logits = LogitsWanted::kNone);

  // Also wants the logits of token token_idx (one already added), after the rows so far.
  void add_logits_row(int32_t token_idx);

  // The ForwardBatch over these arrays; valid until the next clear/add_sequence or destruction.
  ForwardBatch view() const;

  int32_t num_seqs() const { return static_cast<int32_t>(seq_context_len_.size()); }
  int32_t num_tokens() const { return static_cast<int32_t>(token_ids_.size()); }

 private:
  std::vector<int32_t> token_ids_;              // [num_tokens]
  std::vector<int32_t> positions_;              // [num_tokens]
  std::vector<int32_t> seq_token_start_ = {0};  // [num_seqs + 1]
  std::vector<int32_t> seq_context_len_;        // [num_seqs]
  std::vector<int32_t> block_tables_;           // [num_seqs, max_blocks_per_seq]
  std::vector<int32_t> logits_token_idx_;       // [num_logits]
  int32_t max_blocks_per_seq_ = 0;
};

}  // namespace crosspoint
