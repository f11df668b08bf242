#include "runner/forward_batch_builder.h"

#include <algorithm>

#include "common/status.h"

namespace crosspoint {

ForwardBatch ForwardBatchBuilder::build(const BatchPlan& plan) {
  int32_t max_blocks_per_seq = 0;
  for (const auto& s : plan.seqs)
    max_blocks_per_seq = std::max(max_blocks_per_seq, static_cast<int32_t>(s.block_table.size()));
  batch_.clear(max_blocks_per_seq);
  logits_seq_idx_.clear();
  prompt_logits_rows_.clear();
  std::vector<int32_t> first_token(plan.seqs.size());
  for (size_t i = 0; i < plan.seqs.size(); ++i) {
    const ScheduledSequence& s = plan.seqs[i];
    first_token[i] = batch_.num_tokens();
    batch_.add_sequence(s.token_ids, s.num_computed_tokens, s.block_table,
                        s.sample ? LogitsWanted::kLast : LogitsWanted::kNone);
    if (s.sample) logits_seq_idx_.push_back(static_cast<int32_t>(i));
  }
  int32_t row = static_cast<int32_t>(logits_seq_idx_.size());
  for (size_t i = 0; i < plan.seqs.size(); ++i) {
    const ScheduledSequence& s = plan.seqs[i];
    const int32_t n = static_cast<int32_t>(s.prompt_logprob_targets.size());
    if (n == 0) continue;
    CROSSPOINT_CHECK(n <= s.num_new_tokens(), "ForwardBatchBuilder: more prompt logprob targets than new tokens");
    for (int32_t t = 0; t < n; ++t) batch_.add_logits_row(first_token[i] + t);
    prompt_logits_rows_.push_back({static_cast<int32_t>(i), row, n});
    row += n;
  }
  num_logits_rows_ = row;
  return batch_.view();
}

}  // namespace crosspoint
