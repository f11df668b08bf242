#include "runner/forward_batch_builder.h"

#include <algorithm>

namespace crosspoint {

ForwardBatch ForwardBatchBuilder::build(const BatchPlan& plan) {
  token_ids_.clear();
  positions_.clear();
  seq_token_start_.assign(1, 0);
  seq_context_len_.clear();
  logits_token_idx_.clear();
  logits_seq_idx_.clear();
  int32_t max_blocks_per_seq = 0;
  for (const auto& s : plan.seqs) {
    max_blocks_per_seq = std::max(max_blocks_per_seq, static_cast<int32_t>(s.block_table.size()));
  }
  // Padding entries point at block 0; the model never reads past seq_context_len.
  block_tables_.assign(plan.seqs.size() * static_cast<size_t>(max_blocks_per_seq), 0);
  for (size_t i = 0; i < plan.seqs.size(); ++i) {
    const ScheduledSequence& s = plan.seqs[i];
    for (int32_t t = 0; t < s.num_new_tokens(); ++t) {
      token_ids_.push_back(s.token_ids[t]);
      positions_.push_back(s.num_computed_tokens + t);
    }
    seq_token_start_.push_back(static_cast<int32_t>(token_ids_.size()));
    seq_context_len_.push_back(s.context_len());
    std::copy(s.block_table.begin(), s.block_table.end(), block_tables_.begin() + i * max_blocks_per_seq);
    if (s.sample) {
      logits_token_idx_.push_back(static_cast<int32_t>(token_ids_.size()) - 1);
      logits_seq_idx_.push_back(static_cast<int32_t>(i));
    }
  }
  ForwardBatch batch;
  batch.token_ids = token_ids_;
  batch.positions = positions_;
  batch.seq_token_start = seq_token_start_;
  batch.seq_context_len = seq_context_len_;
  batch.block_tables = block_tables_;
  batch.max_blocks_per_seq = max_blocks_per_seq;
  batch.logits_token_idx = logits_token_idx_;
  return batch;
}

}  // namespace crosspoint
