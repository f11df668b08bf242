// BatchPlan -> ForwardBatch: the flat host arrays one model step reads. The builder owns
// the arrays; the ForwardBatch it returns points into them until the next build().
#pragma once

#include <cstdint>
#include <vector>

#include "model/forward_batch.h"
#include "scheduler/batch_plan.h"

namespace crosspoint {

class ForwardBatchBuilder {
 public:
  ForwardBatch build(const BatchPlan& plan);
  // [num_logits] index into plan.seqs of the sequence each logits row belongs to.
  const std::vector<int32_t>& logits_seq_idx() const { return logits_seq_idx_; }

 private:
  std::vector<int32_t> token_ids_;         // [num_tokens]
  std::vector<int32_t> positions_;         // [num_tokens]
  std::vector<int32_t> seq_token_start_;   // [num_seqs + 1]
  std::vector<int32_t> seq_context_len_;   // [num_seqs]
  std::vector<int32_t> block_tables_;      // [num_seqs, max_blocks_per_seq], padded with 0
  std::vector<int32_t> logits_token_idx_;  // [num_logits]
  std::vector<int32_t> logits_seq_idx_;    // [num_logits]
};

}  // namespace crosspoint
