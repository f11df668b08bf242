#include "scheduler/scheduler.h"

#include <algorithm>
#include <string>

namespace crosspoint {

Scheduler::Scheduler(const SchedulerConfig& config)
    : config_(config), block_manager_(config.num_blocks, config.block_size, config.enable_prefix_caching) {
  CROSSPOINT_CHECK(config.max_num_seqs > 0, "max_num_seqs must be positive");
  CROSSPOINT_CHECK(config.max_num_batched_tokens > 0, "max_num_batched_tokens must be positive");
}

Status Scheduler::check_fits(const SchedulerConfig& config, int64_t prompt_len, int64_t max_new_tokens) {
  if (prompt_len == 0) return invalid_argument("the prompt is empty");
  if (max_new_tokens < 1) return invalid_argument("max_tokens must be at least 1");
  const int64_t total = prompt_len + max_new_tokens;
  if (total > config.max_model_len) {
    return invalid_argument("'max_tokens' or 'max_completion_tokens' is too large: " + std::to_string(max_new_tokens) +
                            ". This model's maximum context length is " + std::to_string(config.max_model_len) +
                            " tokens and your request has " + std::to_string(prompt_len) + " input tokens (" +
                            std::to_string(max_new_tokens) + " > " + std::to_string(config.max_model_len) + " - " +
                            std::to_string(prompt_len) + ").");
  }
  const int64_t kv_tokens = static_cast<int64_t>(config.num_blocks) * config.block_size;
  if (total > kv_tokens) {
    return resource_exhausted("prompt plus max_tokens (" + std::to_string(total) +
                              " tokens) exceeds the whole KV cache (" + std::to_string(kv_tokens) + " tokens)");
  }
  return Status::ok();
}

Status Scheduler::add(int64_t seq_id, std::vector<int32_t> prompt_token_ids, int32_t max_new_tokens,
                      const RequestSamplingParams& sampling, std::string cache_salt) {
  if (sequences_.count(seq_id) != 0) return invalid_argument("sequence " + std::to_string(seq_id) + " already exists");
  const int64_t prompt_len = static_cast<int64_t>(prompt_token_ids.size());
  CROSSPOINT_RETURN_IF_ERROR(check_fits(config_, prompt_len, max_new_tokens));
  auto seq = std::make_unique<Sequence>();
  seq->seq_id = seq_id;
  seq->num_prompt_tokens = static_cast<int32_t>(prompt_len);
  seq->token_ids = std::move(prompt_token_ids);
  seq->sampling = sampling;
  seq->cache_salt = std::move(cache_salt);
  waiting_.push_back(seq.get());
  sequences_.emplace(seq_id, std::move(seq));
  return Status::ok();
}

ScheduledSequence Scheduler::make_scheduled(const Sequence& seq, int32_t num_new_tokens) const {
  ScheduledSequence s;
  s.seq_id = seq.seq_id;
  s.num_computed_tokens = seq.num_computed_tokens;
  s.token_ids.assign(seq.token_ids.begin() + seq.num_computed_tokens,
                     seq.token_ids.begin() + seq.num_computed_tokens + num_new_tokens);
  s.block_table = seq.block_table;
  s.sample = seq.num_computed_tokens + num_new_tokens == seq.num_tokens();
  s.output_token_idx = seq.num_output_tokens();
  s.sampling_params = &seq.sampling;
  const std::span<const int32_t> all(seq.token_ids);
  s.prompt_token_ids = all.first(seq.num_prompt_tokens);
  s.output_token_ids = all.subspan(seq.num_prompt_tokens);
  if (seq.sampling.wants_prompt_logprobs()) {
    for (int32_t p = seq.num_computed_tokens; p < seq.num_computed_tokens + num_new_tokens; ++p) {
      if (p + 1 >= seq.num_prompt_tokens) break;
      s.prompt_logprob_targets.push_back(seq.token_ids[p + 1]);
    }
  }
  return s;
}

int32_t Scheduler::fit_prompt_logprob_rows(const Sequence& seq, int32_t start, int32_t num_new,
                                           int32_t* rows_left) const {
  if (config_.max_prompt_logprob_rows <= 0 || !seq.sampling.wants_prompt_logprobs()) return num_new;
  const int32_t rows = std::clamp(seq.num_prompt_tokens - 1 - start, 0, num_new);
  if (rows <= *rows_left) {
    *rows_left -= rows;
    return num_new;
  }
  const int32_t fitted = *rows_left;  // each of these tokens is a prompt position with a row
  *rows_left = 0;
  return fitted;
}

void Scheduler::preempt(Sequence& seq) {
  block_manager_.release(seq.block_table);
  seq.num_computed_tokens = 0;
  seq.num_hashed_blocks = 0;
  seq.state = SequenceState::kWaiting;
  ++seq.num_preemptions;
  ++num_preemptions_;
}

BatchPlan Scheduler::schedule() {
  BatchPlan plan;
  int32_t budget = config_.max_num_batched_tokens;
  std::vector<Sequence*> preempted;  // most recent arrival first
  int32_t prompt_logprob_rows_left = config_.max_prompt_logprob_rows;

  // Running sequences, oldest first. Victims are taken from the back, which has not been
  // scheduled yet in this loop.
  for (size_t i = 0; i < running_.size() && budget > 0;) {
    Sequence& seq = *running_[i];
    CROSSPOINT_CHECK(seq.num_tokens() > seq.num_computed_tokens, "running sequence with nothing to compute");
    const int32_t num_new = fit_prompt_logprob_rows(seq, seq.num_computed_tokens,
                                                    std::min(seq.num_tokens() - seq.num_computed_tokens, budget),
                                                    &prompt_logprob_rows_left);
    if (num_new == 0) {  // no prompt logprob rows left in this step; it goes on in the next
      ++i;
      continue;
    }
    const int32_t target = seq.num_computed_tokens + num_new;
    bool self_preempted = false;
    while (!block_manager_.can_grow(seq.block_table, target)) {
      Sequence* victim = running_.back();
      running_.pop_back();
      preempt(*victim);
      preempted.push_back(victim);
      if (victim == &seq) {
        self_preempted = true;
        break;
      }
    }
    if (self_preempted) break;
    block_manager_.grow(seq.block_table, target);
    plan.seqs.push_back(make_scheduled(seq, num_new));
    const bool is_decode = num_new == 1 && seq.num_output_tokens() > 0 && target == seq.num_tokens();
    if (!is_decode) plan.num_prefill_tokens += num_new;
    budget -= num_new;
    ++i;
  }
  // Preempted sequences go back to the front of the queue, oldest first.
  for (Sequence* seq : preempted) waiting_.push_front(seq);

  // Waiting sequences, strictly in order: if the head does not fit, nobody behind it runs.
  // No admission in a step that had to preempt: memory is short.
  while (preempted.empty() && !waiting_.empty() && budget > 0 &&
         static_cast<int32_t>(running_.size()) < config_.max_num_seqs) {
    Sequence& seq = *waiting_.front();
    // Cached whole blocks of its tokens, short of the last token (its logits must be computed).
    // A request that wants prompt logprobs computes its whole prompt (the logits of every
    // position are needed), as in vLLM.
    std::vector<int32_t> cached;
    const bool reads_cache =
        block_manager_.caching_enabled() && seq.block_table.empty() && !seq.sampling.wants_prompt_logprobs();
    if (reads_cache)
      cached = block_manager_.match_prefix(seq.token_ids, (seq.num_tokens() - 1) / config_.block_size, seq.cache_salt);
    const int32_t num_cached = static_cast<int32_t>(cached.size()) * config_.block_size;
    const int32_t start = std::max(seq.num_computed_tokens, num_cached);
    int32_t rows_left = prompt_logprob_rows_left;
    const int32_t num_new = fit_prompt_logprob_rows(seq, start, std::min(seq.num_tokens() - start, budget), &rows_left);
    if (num_new == 0) break;
    const int32_t target = start + num_new;
    if (!block_manager_.can_grow_with(cached, target)) break;
    prompt_logprob_rows_left = rows_left;
    waiting_.pop_front();
    if (reads_cache) {
      block_manager_.take_cached(seq.block_table, cached);
      seq.num_computed_tokens = num_cached;
      seq.num_hashed_blocks = static_cast<int32_t>(cached.size());
      prefix_cache_queries_ += seq.num_tokens();
      prefix_cache_hits_ += num_cached;
    }
    block_manager_.grow(seq.block_table, target);
    seq.state = SequenceState::kRunning;
    running_.push_back(&seq);
    plan.seqs.push_back(make_scheduled(seq, num_new));
    plan.num_prefill_tokens += num_new;
    budget -= num_new;
  }
  plan.num_batched_tokens = config_.max_num_batched_tokens - budget;
  return plan;
}

void Scheduler::on_step_done(const BatchPlan& plan, const std::vector<int32_t>& sampled_token_ids) {
  CROSSPOINT_CHECK(sampled_token_ids.size() == plan.seqs.size(), "one sampled token per scheduled sequence");
  for (size_t i = 0; i < plan.seqs.size(); ++i) {
    const ScheduledSequence& s = plan.seqs[i];
    auto it = sequences_.find(s.seq_id);
    if (it == sequences_.end()) continue;  // aborted during the step
    Sequence& seq = *it->second;
    if (seq.state != SequenceState::kRunning) continue;
    seq.num_computed_tokens = s.context_len();
    if (s.sample) seq.token_ids.push_back(sampled_token_ids[i]);
    seq.num_hashed_blocks = block_manager_.cache_full_blocks(seq.token_ids, seq.block_table, seq.num_hashed_blocks,
                                                             seq.num_computed_tokens, seq.cache_salt);
  }
}

void Scheduler::finish(int64_t seq_id) {
  auto it = sequences_.find(seq_id);
  if (it == sequences_.end()) return;
  Sequence* seq = it->second.get();
  block_manager_.release(seq->block_table);
  seq->state = SequenceState::kFinished;
  auto drop = [seq](std::deque<Sequence*>& queue) {
    queue.erase(std::remove(queue.begin(), queue.end(), seq), queue.end());
  };
  drop(running_);
  drop(waiting_);
  sequences_.erase(it);
}

const Sequence* Scheduler::find(int64_t seq_id) const {
  auto it = sequences_.find(seq_id);
  return it == sequences_.end() ? nullptr : it->second.get();
}

}  // namespace crosspoint
