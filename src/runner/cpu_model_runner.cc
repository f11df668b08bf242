#include "runner/cpu_model_runner.h"

#include <string>

#include "common/clock.h"
#include "runner/request_sampler.h"

namespace crosspoint {

CpuModelRunner::CpuModelRunner(const KvCacheShape& kv_shape, int32_t vocab_size, ForwardFn forward)
    : kv_cache_(std::make_unique<CpuKvCache>(kv_shape)), vocab_size_(vocab_size), forward_(std::move(forward)) {
  CROSSPOINT_CHECK(vocab_size > 0, "CpuModelRunner: vocab_size must be positive");
}

Result<StepOutput> CpuModelRunner::execute(const BatchPlan& plan) {
  StepOutput output;
  output.sampled_token_ids.assign(plan.seqs.size(), -1);
  if (plan.seqs.empty()) return output;
  const ForwardBatch batch = builder_.build(plan);
  const auto& logits_seq_idx = builder_.logits_seq_idx();
  logits_.resize(static_cast<size_t>(logits_seq_idx.size()) * vocab_size_);
  Stopwatch forward_timer;
  Status status = forward_(batch, *kv_cache_, logits_.data());
  if (!status.is_ok()) return Status(status.code(), "forward pass: " + status.message());
  output.forward_ms = forward_timer.elapsed_ms();
  Stopwatch sampling_timer;
  for (size_t row = 0; row < logits_seq_idx.size(); ++row) {
    const ScheduledSequence& s = plan.seqs[logits_seq_idx[row]];
    output.sampled_token_ids[logits_seq_idx[row]] =
        sample_request_token(logits_.data() + row * vocab_size_, vocab_size_, s.sampling, s.output_token_idx);
  }
  output.sampling_ms = sampling_timer.elapsed_ms();
  return output;
}

}  // namespace crosspoint
