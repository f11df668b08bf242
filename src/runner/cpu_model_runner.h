// The CPU runner: owns the paged KV cache, turns each BatchPlan into a ForwardBatch, calls
// the model's forward pass, and samples every sequence that asked for a token with its own
// parameters and random stream.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "model/kv_cache.h"
#include "runner/forward_batch_builder.h"
#include "runner/runner.h"

namespace crosspoint {

// One forward pass: writes K/V of batch's tokens into kv_cache and the logits of
// batch.logits_token_idx into logits ([num_logits, vocab_size] f32). The model's
// forward(batch, kv_cache, logits) fits; tests pass a toy model.
using ForwardFn = std::function<Status(const ForwardBatch& batch, CpuKvCache& kv_cache, float* logits)>;

class CpuModelRunner : public Runner {
 public:
  CpuModelRunner(const KvCacheShape& kv_shape, int32_t vocab_size, ForwardFn forward);

  Result<StepOutput> execute(const BatchPlan& plan) override;
  CpuKvCache& kv_cache() { return *kv_cache_; }

 private:
  // The logprobs of the step's prompt positions (ForwardBatchBuilder::prompt_logits_rows).
  void prompt_logprobs(const BatchPlan& plan, StepOutput& output) const;

  std::unique_ptr<CpuKvCache> kv_cache_;
  int32_t vocab_size_;
  ForwardFn forward_;
  ForwardBatchBuilder builder_;
  std::vector<float> logits_;  // [num_logits, vocab_size] f32
};

}  // namespace crosspoint
