#include "engine/engine.h"

#include <algorithm>

#include "common/clock.h"
#include "common/log.h"

namespace crosspoint {

Engine::Engine(const EngineConfig& config, std::unique_ptr<Runner> runner)
    : config_(config), runner_(std::move(runner)), scheduler_(config.scheduler) {
  CROSSPOINT_CHECK(runner_ != nullptr, "Engine needs a runner");
  metrics_.num_total_blocks = config.scheduler.num_blocks;
  metrics_.num_free_blocks = config.scheduler.num_blocks;
}

Engine::~Engine() { stop(); }

void Engine::start() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (thread_.joinable() || stopping_) return;
  running_ = true;
  thread_ = std::thread([this] { loop(); });
}

void Engine::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  running_ = false;
  // Anything never picked up by the loop (or everything, if it never started).
  take_new_work();
  for (auto it = active_.begin(); it != active_.end(); it = active_.begin()) {
    finish_request(it->first, FinishReason::kAbort, {}, -1);
  }
}

std::optional<RequestRefusal> Engine::validate(const EngineRequest& request) const {
  if (config_.vocab_size > 0) {
    for (int32_t id : request.prompt_token_ids)
      if (id < 0 || id >= config_.vocab_size)
        return RequestRefusal{RefusedField::kPrompt, invalid_argument("prompt token id " + std::to_string(id) +
                                                                      " is outside the model's vocabulary (" +
                                                                      std::to_string(config_.vocab_size) + " ids)")};
  }
  if (request.sampling.num_logprobs > kMaxTopLogprobs)
    return RequestRefusal{RefusedField::kLogprobs, invalid_argument("at most " + std::to_string(kMaxTopLogprobs) +
                                                                    " top logprobs can be asked for, not " +
                                                                    std::to_string(request.sampling.num_logprobs))};
  if (request.sampling.num_prompt_logprobs > kMaxTopLogprobs)
    return RequestRefusal{
        RefusedField::kPromptLogprobs,
        invalid_argument("at most " + std::to_string(kMaxTopLogprobs) + " top prompt logprobs can be asked for, not " +
                         std::to_string(request.sampling.num_prompt_logprobs))};
  const int64_t prompt_len = static_cast<int64_t>(request.prompt_token_ids.size());
  if (Status s = Scheduler::check_fits(config_.scheduler, prompt_len, request.max_tokens); !s.is_ok())
    return RequestRefusal{prompt_len == 0 ? RefusedField::kPrompt : RefusedField::kMaxTokens, s};
  return std::nullopt;
}

Result<int64_t> Engine::submit(EngineRequest request, OutputSink sink) {
  if (auto refusal = validate(request)) return refusal->status;
  int64_t request_id = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) return unavailable("the engine is shutting down");
    const int64_t num_waiting = num_scheduler_waiting_ + static_cast<int64_t>(pending_.size());
    if (config_.max_waiting > 0 && num_waiting >= config_.max_waiting) {
      return unavailable("the server is overloaded: " + std::to_string(num_waiting) +
                         " requests are already waiting (limit " + std::to_string(config_.max_waiting) + ")");
    }
    request_id = next_request_id_++;
    pending_.push_back({request_id, std::move(request), std::move(sink), monotonic_seconds()});
  }
  wake_.notify_one();
  return request_id;
}

void Engine::abort(int64_t request_id, FinishReason reason) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    pending_aborts_.emplace_back(request_id, reason);
  }
  wake_.notify_one();
}

EngineMetrics Engine::metrics() const {
  std::lock_guard<std::mutex> lock(mutex_);
  EngineMetrics copy = metrics_;
  copy.num_requests_waiting += static_cast<int32_t>(pending_.size());
  return copy;
}

void Engine::loop() {
  while (true) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [this] {
        return stopping_ || !pending_.empty() || !pending_aborts_.empty() || scheduler_.has_unfinished();
      });
      if (stopping_) return;
    }
    take_new_work();
    if (scheduler_.has_unfinished()) run_step();
    publish_gauges();
  }
}

void Engine::take_new_work() {
  std::deque<PendingRequest> incoming;
  std::vector<std::pair<int64_t, FinishReason>> aborts;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    incoming.swap(pending_);
    aborts.swap(pending_aborts_);
  }
  for (PendingRequest& p : incoming) {
    const int32_t max_tokens = p.request.max_tokens;
    const RequestSamplingParams sampling = p.request.sampling;
    Status status =
        scheduler_.add(p.request_id, p.request.prompt_token_ids, max_tokens, sampling, p.request.cache_salt);
    ActiveRequest active{std::move(p.request), std::move(p.sink), p.arrival_s, 0.0, 0.0};
    active_.emplace(p.request_id, std::move(active));
    if (!status.is_ok()) {  // submit() checked the same rules; only a race with shutdown gets here
      log_warning("request {} refused by the scheduler: {}", p.request_id, status.to_string());
      finish_request(p.request_id, FinishReason::kError, {}, -1);
    }
  }
  for (const auto& [request_id, reason] : aborts) {
    if (active_.count(request_id) != 0) finish_request(request_id, reason, {}, -1);
  }
}

FinishReason Engine::check_finish(const ActiveRequest& active, const Sequence& seq, int32_t token,
                                  int32_t* stop_token_id) const {
  const EngineRequest& r = active.request;
  if (std::find(r.stop_token_ids.begin(), r.stop_token_ids.end(), token) != r.stop_token_ids.end()) {
    *stop_token_id = token;
    return FinishReason::kStop;
  }
  if (!r.ignore_eos &&
      std::find(config_.eos_token_ids.begin(), config_.eos_token_ids.end(), token) != config_.eos_token_ids.end()) {
    return FinishReason::kStop;
  }
  if (seq.num_output_tokens() >= r.max_tokens || seq.num_tokens() >= config_.scheduler.max_model_len) {
    return FinishReason::kLength;
  }
  return FinishReason::kNone;
}

void Engine::run_step() {
  const BatchPlan plan = scheduler_.schedule();
  if (plan.empty()) return;
  record_scheduling(plan, monotonic_seconds());
  Result<StepOutput> output = runner_->execute(plan);
  if (!output.is_ok()) {
    // A failed forward pass ends every request of the step; the server reports the error.
    log_error("engine step failed: {}", output.status().to_string());
    for (const auto& s : plan.seqs) finish_request(s.seq_id, FinishReason::kError, {}, -1);
    return;
  }
  scheduler_.on_step_done(plan, output->sampled_token_ids);
  const StepRecord record = post_process(plan, *output);
  record_step(plan, record);
}

// The queue time of each request scheduled for the first time.
void Engine::record_scheduling(const BatchPlan& plan, double step_start_s) {
  for (const auto& s : plan.seqs) {
    auto it = active_.find(s.seq_id);
    if (it != active_.end() && it->second.first_scheduled_s == 0.0) {
      it->second.first_scheduled_s = step_start_s;
      std::lock_guard<std::mutex> lock(mutex_);
      metrics_.request_queue_time_seconds.observe(step_start_s - it->second.arrival_s);
    }
  }
}

void Engine::gather_prompt_logprobs(const BatchPlan& plan, const StepOutput& output) {
  if (output.prompt_logprobs.empty()) return;
  for (size_t i = 0; i < plan.seqs.size(); ++i) {
    const ScheduledSequence& s = plan.seqs[i];
    const std::vector<TokenLogprobs>& step = output.prompt_logprobs[i];
    auto it = active_.find(s.seq_id);
    if (step.empty() || it == active_.end() || it->second.prompt_logprobs_sent) continue;
    std::vector<TokenLogprobs>& kept = it->second.prompt_logprobs;
    for (size_t t = 0; t < step.size(); ++t) {
      // Entry p is the logprob of prompt token p + 1, computed at position p.
      const size_t position = static_cast<size_t>(s.num_computed_tokens) + t;
      CROSSPOINT_CHECK(position <= kept.size(), "prompt logprobs: a prompt position was skipped");
      if (position == kept.size()) kept.push_back(step[t]);
    }
  }
}

// Each sampled token: stop checks, then the request's update or its end.
Engine::StepRecord Engine::post_process(const BatchPlan& plan, const StepOutput& output) {
  const double now_s = monotonic_seconds();
  StepRecord record;
  gather_prompt_logprobs(plan, output);
  for (size_t i = 0; i < plan.seqs.size(); ++i) {
    const ScheduledSequence& s = plan.seqs[i];
    if (!s.sample) continue;
    auto it = active_.find(s.seq_id);
    const Sequence* seq = scheduler_.find(s.seq_id);
    if (it == active_.end() || seq == nullptr) continue;
    ActiveRequest& active = it->second;
    const int32_t token = output.sampled_token_ids[i];
    ++record.num_generated;
    if (active.last_token_s == 0.0) {
      record.ttft_s.push_back(now_s - active.arrival_s);
      record.num_prompt += static_cast<uint64_t>(seq->num_prompt_tokens);
    } else {
      record.itl_s.push_back(now_s - active.last_token_s);
    }
    active.last_token_s = now_s;
    std::vector<TokenLogprobs> logprobs;
    if (!output.logprobs.empty() && output.logprobs[i]) logprobs.push_back(*output.logprobs[i]);
    // A sampled token means the whole prompt was computed: every position's logprob is in.
    CROSSPOINT_CHECK(!active.request.sampling.wants_prompt_logprobs() || active.prompt_logprobs_sent ||
                         active.prompt_logprobs.size() + 1 == active.request.prompt_token_ids.size(),
                     "prompt logprobs: the runner did not compute every prompt position");
    int32_t stop_token_id = -1;
    const FinishReason reason = check_finish(active, *seq, token, &stop_token_id);
    if (reason != FinishReason::kNone) {
      finish_request(s.seq_id, reason, {token}, stop_token_id, std::move(logprobs));
    } else {
      RequestOutput update;
      update.request_id = s.seq_id;
      update.new_token_ids = {token};
      update.new_logprobs = std::move(logprobs);
      update.prompt_logprobs = take_prompt_logprobs(active);
      update.num_prompt_tokens = seq->num_prompt_tokens;
      update.num_output_tokens = seq->num_output_tokens();
      active.sink(update);
    }
  }
  return record;
}

void Engine::record_step(const BatchPlan& plan, const StepRecord& record) {
  std::lock_guard<std::mutex> lock(mutex_);
  metrics_.num_steps++;
  metrics_.num_preemptions = static_cast<uint64_t>(scheduler_.num_preemptions());
  metrics_.generation_tokens += record.num_generated;
  metrics_.prompt_tokens += record.num_prompt;
  for (double v : record.ttft_s) metrics_.time_to_first_token_seconds.observe(v);
  for (double v : record.itl_s) metrics_.inter_token_latency_seconds.observe(v);
  metrics_.iteration_tokens.observe(plan.num_batched_tokens);
  metrics_.iteration_num_seqs.observe(static_cast<double>(plan.seqs.size()));
}

std::vector<TokenLogprobs> Engine::take_prompt_logprobs(ActiveRequest& active) {
  if (!active.request.sampling.wants_prompt_logprobs() || active.prompt_logprobs_sent) return {};
  active.prompt_logprobs_sent = true;
  return std::move(active.prompt_logprobs);
}

void Engine::finish_request(int64_t request_id, FinishReason reason, std::vector<int32_t> new_tokens,
                            int32_t stop_token_id, std::vector<TokenLogprobs> new_logprobs) {
  auto it = active_.find(request_id);
  if (it == active_.end()) return;
  RequestOutput update;
  update.request_id = request_id;
  update.new_token_ids = std::move(new_tokens);
  update.new_logprobs = std::move(new_logprobs);
  update.finished = true;
  update.finish_reason = reason;
  update.stop_token_id = stop_token_id;
  update.prompt_logprobs = take_prompt_logprobs(it->second);
  if (const Sequence* seq = scheduler_.find(request_id)) {
    update.num_prompt_tokens = seq->num_prompt_tokens;
    update.num_output_tokens = seq->num_output_tokens();
  } else {
    update.num_prompt_tokens = static_cast<int32_t>(it->second.request.prompt_token_ids.size());
  }
  scheduler_.finish(request_id);  // frees its blocks now
  OutputSink sink = std::move(it->second.sink);
  const double e2e_s = monotonic_seconds() - it->second.arrival_s;
  active_.erase(it);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    metrics_.request_success[finish_reason_name(reason)]++;
    metrics_.e2e_request_latency_seconds.observe(e2e_s);
  }
  if (sink) sink(update);
}

void Engine::publish_gauges() {
  std::lock_guard<std::mutex> lock(mutex_);
  num_scheduler_waiting_ = scheduler_.num_waiting();
  metrics_.num_requests_running = scheduler_.num_running();
  metrics_.num_requests_waiting = scheduler_.num_waiting();
  metrics_.kv_cache_usage = scheduler_.block_manager().usage();
  metrics_.num_free_blocks = scheduler_.block_manager().num_free_blocks();
  metrics_.num_preemptions = static_cast<uint64_t>(scheduler_.num_preemptions());
  metrics_.prefix_cache_queries = static_cast<uint64_t>(scheduler_.prefix_cache_queries());
  metrics_.prefix_cache_hits = static_cast<uint64_t>(scheduler_.prefix_cache_hits());
}

}  // namespace crosspoint
