// What the engine needs from whatever computes a step: run a BatchPlan, return one sampled
// token per scheduled sequence. The engine never learns which device does the work (the
// CPU runner now, a CUDA runner later).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "common/status.h"
#include "request/logprobs.h"
#include "scheduler/batch_plan.h"

namespace crosspoint {

struct StepOutput {
  // [plan.seqs.size()] token sampled for each scheduled sequence; -1 where !sample.
  std::vector<int32_t> sampled_token_ids;
  // [plan.seqs.size()] the sampled token's logprobs where the sequence asked for them
  // (sampling.num_logprobs >= 0); left empty when no sequence of the step did.
  std::vector<std::optional<TokenLogprobs>> logprobs;
  // [plan.seqs.size()] where a sequence has prompt_logprob_targets: the logprobs of those
  // targets, in order (token i of the step predicting prompt_logprob_targets[i]); left empty
  // when no sequence of the step has any.
  std::vector<std::vector<TokenLogprobs>> prompt_logprobs;
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
