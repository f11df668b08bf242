// BatchPlan -> ForwardBatch: the flat host arrays one model step reads. The builder owns
// the arrays; the ForwardBatch it returns points into them until the next build().
// Logits rows: first one per sequence that samples (in plan order), then the prompt positions
// whose logprobs are wanted (ScheduledSequence::prompt_logprob_targets), sequence by sequence.
#pragma once

#include <cstdint>
#include <vector>

#include "model/forward_batch.h"
#include "model/host_forward_batch.h"
#include "scheduler/batch_plan.h"

namespace crosspoint {

class ForwardBatchBuilder {
 public:
  ForwardBatch build(const BatchPlan& plan);
  // [num_logits] index into plan.seqs of the sequence each logits row belongs to.
  // Only the sampled rows, which come first.
  const std::vector<int32_t>& logits_seq_idx() const { return logits_seq_idx_; }

  // The rows after the sampled ones: rows [first_row, first_row + targets.size()) hold the logits
  // of plan.seqs[seq_idx]'s first prompt_logprob_targets.size() tokens of this step.
  struct PromptLogitsRows {
    int32_t seq_idx = 0;
    int32_t first_row = 0;
    int32_t num_rows = 0;
  };
  const std::vector<PromptLogitsRows>& prompt_logits_rows() const { return prompt_logits_rows_; }
  // Sampled plus prompt rows.
  int32_t num_logits_rows() const { return num_logits_rows_; }

 private:
  HostForwardBatch batch_;
  std::vector<int32_t> logits_seq_idx_;  // [num sampled rows]
  std::vector<PromptLogitsRows> prompt_logits_rows_;
  int32_t num_logits_rows_ = 0;
};

}  // namespace crosspoint
