#include "model/host_forward_batch.h"

#include <algorithm>

#include "common/status.h"

namespace crosspoint {

void HostForwardBatch::clear(int32_t max_blocks_per_seq) {
  token_ids_.clear();
  positions_.clear();
  seq_token_start_.assign(1, 0);
  seq_context_len_.clear();
  block_tables_.clear();
  logits_token_idx_.clear();
  max_blocks_per_seq_ = max_blocks_per_seq;
}

void HostForwardBatch::add_sequence(std::span<const int32_t> tokens, int32_t num_cached,
                                    std::span<const int32_t> block_table_row, LogitsWanted logits) {
  CROSSPOINT_CHECK(static_cast<int32_t>(block_table_row.size()) <= max_blocks_per_seq_,
                   "HostForwardBatch: a block table row is longer than max_blocks_per_seq");
  const int32_t first = static_cast<int32_t>(token_ids_.size());
  for (size_t i = 0; i < tokens.size(); ++i) {
    token_ids_.push_back(tokens[i]);
    positions_.push_back(num_cached + static_cast<int32_t>(i));
    if (logits == LogitsWanted::kAll) logits_token_idx_.push_back(first + static_cast<int32_t>(i));
  }
  if (logits == LogitsWanted::kLast && !tokens.empty())
    logits_token_idx_.push_back(static_cast<int32_t>(token_ids_.size()) - 1);
  seq_token_start_.push_back(static_cast<int32_t>(token_ids_.size()));
  seq_context_len_.push_back(num_cached + static_cast<int32_t>(tokens.size()));
  block_tables_.insert(block_tables_.end(), block_table_row.begin(), block_table_row.end());
  block_tables_.resize(block_tables_.size() + (max_blocks_per_seq_ - block_table_row.size()), 0);
}

void HostForwardBatch::add_logits_row(int32_t token_idx) {
  CROSSPOINT_CHECK(token_idx >= 0 && token_idx < num_tokens(), "HostForwardBatch: logits row of a token not added");
  logits_token_idx_.push_back(token_idx);
}

ForwardBatch HostForwardBatch::view() const {
  ForwardBatch b;
  b.token_ids = token_ids_;
  b.positions = positions_;
  b.seq_token_start = seq_token_start_;
  b.seq_context_len = seq_context_len_;
  b.block_tables = block_tables_;
  b.max_blocks_per_seq = max_blocks_per_seq_;
  b.logits_token_idx = logits_token_idx_;
  return b;
}

}  // namespace crosspoint
