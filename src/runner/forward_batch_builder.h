// BatchPlan -> ForwardBatch: the flat host arrays one model step reads. The builder owns
// the arrays; the ForwardBatch it returns points into them until the next build().
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
  const std::vector<int32_t>& logits_seq_idx() const { return logits_seq_idx_; }

 private:
  HostForwardBatch batch_;
  std::vector<int32_t> logits_seq_idx_;  // [num_logits]
};

}  // namespace crosspoint
