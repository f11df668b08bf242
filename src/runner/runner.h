// What the engine needs from whatever computes a step: run a BatchPlan, return one sampled
// token per scheduled sequence. The engine never learns which device does the work (the
// CPU runner now, a CUDA runner later).
#pragma once

#include <cstdint>
#include <vector>

#include "common/status.h"
#include "scheduler/batch_plan.h"

namespace crosspoint {

struct StepOutput {
  // [plan.seqs.size()] token sampled for each scheduled sequence; -1 where !sample.
  std::vector<int32_t> sampled_token_ids;
  // Time spent in the model's forward pass and in sampling, milliseconds.
  double forward_ms = 0.0;
  double sampling_ms = 0.0;
};

class Runner {
 public:
  virtual ~Runner() = default;
  virtual Result<StepOutput> execute(const BatchPlan& plan) = 0;
};

}  // namespace crosspoint
