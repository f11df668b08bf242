#include "runner/forward_batch_builder.h"

#include <algorithm>

namespace crosspoint {

ForwardBatch ForwardBatchBuilder::build(const BatchPlan& plan) {
  int32_t max_blocks_per_seq = 0;
  for (const auto& s : plan.seqs)
    max_blocks_per_seq = std::max(max_blocks_per_seq, static_cast<int32_t>(s.block_table.size()));
  batch_.clear(max_blocks_per_seq);
  logits_seq_idx_.clear();
  for (size_t i = 0; i < plan.seqs.size(); ++i) {
    const ScheduledSequence& s = plan.seqs[i];
    batch_.add_sequence(s.token_ids, s.num_computed_tokens, s.block_table,
                        s.sample ? LogitsWanted::kLast : LogitsWanted::kNone);
    if (s.sample) logits_seq_idx_.push_back(static_cast<int32_t>(i));
  }
  return batch_.view();
}

}  // namespace crosspoint
