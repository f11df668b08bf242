#include "runner/cpu_model_runner.h"

#include <string>

#include "common/clock.h"
#include "common/thread_pool.h"
#include "runner/request_sampler.h"
#include "runner/token_logprobs.h"

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
  logits_.resize(static_cast<size_t>(builder_.num_logits_rows()) * vocab_size_);
  Stopwatch forward_timer;
  Status status = forward_(batch, *kv_cache_, logits_.data());
  if (!status.is_ok()) return Status(status.code(), "forward pass: " + status.message());
  output.forward_ms = forward_timer.elapsed_ms();
  Stopwatch sampling_timer;
  for (size_t row = 0; row < logits_seq_idx.size(); ++row) {
    const int32_t seq_idx = logits_seq_idx[row];
    const ScheduledSequence& s = plan.seqs[seq_idx];
    const float* row_logits = logits_.data() + row * vocab_size_;
    const int32_t token = sample_scheduled_token(row_logits, vocab_size_, s);
    output.sampled_token_ids[seq_idx] = token;
    if (s.sampling().wants_logprobs()) {
      if (output.logprobs.empty()) output.logprobs.resize(plan.seqs.size());
      output.logprobs[seq_idx] =
          compute_token_logprobs({row_logits, static_cast<size_t>(vocab_size_)}, token, s.sampling().num_logprobs);
    }
  }
  prompt_logprobs(plan, output);
  output.sampling_ms = sampling_timer.elapsed_ms();
  return output;
}

void CpuModelRunner::prompt_logprobs(const BatchPlan& plan, StepOutput& output) const {
  const auto& rows = builder_.prompt_logits_rows();
  if (rows.empty()) return;
  output.prompt_logprobs.resize(plan.seqs.size());
  for (const auto& r : rows) output.prompt_logprobs[r.seq_idx].resize(static_cast<size_t>(r.num_rows));
  // Every (sequence, position) is independent and writes its own entry.
  for (const auto& r : rows) {
    const ScheduledSequence& s = plan.seqs[r.seq_idx];
    std::vector<TokenLogprobs>& out = output.prompt_logprobs[r.seq_idx];
    global_thread_pool().parallel_for(static_cast<size_t>(r.num_rows), [&](size_t begin, size_t end) {
      for (size_t t = begin; t < end; ++t) {
        const float* row_logits = logits_.data() + (static_cast<size_t>(r.first_row) + t) * vocab_size_;
        out[t] = compute_token_logprobs({row_logits, static_cast<size_t>(vocab_size_)}, s.prompt_logprob_targets[t],
                                        s.sampling().num_prompt_logprobs);
      }
    });
  }
}

}  // namespace crosspoint
