// The serving engine: one thread runs the step loop (take new requests and aborts ->
// schedule -> run -> postprocess) while any thread submits and aborts requests. Each
// request's tokens are streamed to its OutputSink as they are produced. Token ids only:
// text and stop strings are the server's business.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "common/status.h"
#include "engine/engine_metrics.h"
#include "engine/engine_request.h"
#include "runner/runner.h"
#include "scheduler/scheduler.h"

namespace crosspoint {

struct EngineConfig {
  SchedulerConfig scheduler;
  // Requests allowed to wait for admission before submit() refuses (0 = no limit).
  int32_t max_waiting = 0;
  // Token ids that end generation unless a request sets ignore_eos.
  std::vector<int32_t> eos_token_ids;
  // The model's vocabulary: submit() refuses prompt ids outside [0, vocab_size), so one bad
  // request never reaches (and fails) a batch. 0 = not checked.
  int32_t vocab_size = 0;
};

class Engine {
 public:
  Engine(const EngineConfig& config, std::unique_ptr<Runner> runner);
  ~Engine();  // stop()s
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  const EngineConfig& config() const { return config_; }
  void start();
  // Aborts every request (each sink gets its final update), then joins the loop thread.
  void stop();

  // What is wrong with a request whatever the engine's load, and which of its fields is at
  // fault, or nothing. The server words this once, with the field as OpenAI's "param".
  std::optional<RequestRefusal> validate(const EngineRequest& request) const;

  // Queues a request; returns its id. Fails (without calling sink) with validate()'s status
  // when the request can never run (invalid_argument / resource_exhausted naming the
  // numbers), and with unavailable when the waiting queue is over max_waiting or after stop().
  Result<int64_t> submit(EngineRequest request, OutputSink sink);
  // Ends a request now; its blocks are freed before the next step and its sink gets a
  // final update with `reason` (abort; stop when the server found a stop string). Unknown
  // or finished ids are ignored.
  void abort(int64_t request_id, FinishReason reason = FinishReason::kAbort);

  EngineMetrics metrics() const;
  bool is_running() const { return running_.load(); }

 private:
  struct ActiveRequest {
    EngineRequest request;
    OutputSink sink;
    double arrival_s = 0.0;
    double last_token_s = 0.0;  // 0 until the first token
    double first_scheduled_s = 0.0;
    // Prompt logprobs gathered chunk by chunk until they go out with the first update.
    std::vector<TokenLogprobs> prompt_logprobs;
    bool prompt_logprobs_sent = false;
  };
  struct PendingRequest {
    int64_t request_id;
    EngineRequest request;
    OutputSink sink;
    double arrival_s;
  };

  // What one step produced, for record_step: token counts and latencies to observe.
  struct StepRecord {
    uint64_t num_generated = 0, num_prompt = 0;
    std::vector<double> ttft_s, itl_s;
  };

  void loop();
  void take_new_work();
  // One engine step, as in docs/serving.md's diagram: schedule, execute, post-process, record.
  void run_step();
  void record_scheduling(const BatchPlan& plan, double step_start_s);
  StepRecord post_process(const BatchPlan& plan, const StepOutput& output);
  // Keeps the step's prompt logprobs of each request (a recomputed position is already known).
  void gather_prompt_logprobs(const BatchPlan& plan, const StepOutput& output);
  // The prompt logprobs for the request's first update; empty once sent or when not asked for.
  static std::vector<TokenLogprobs> take_prompt_logprobs(ActiveRequest& active);
  void record_step(const BatchPlan& plan, const StepRecord& record);
  // Postprocessing of one sampled token: returns the finish reason (kNone to continue).
  FinishReason check_finish(const ActiveRequest& active, const Sequence& seq, int32_t token,
                            int32_t* stop_token_id) const;
  void finish_request(int64_t request_id, FinishReason reason, std::vector<int32_t> new_tokens, int32_t stop_token_id,
                      std::vector<TokenLogprobs> new_logprobs = {});
  void publish_gauges();

  const EngineConfig config_;
  std::unique_ptr<Runner> runner_;
  Scheduler scheduler_;                      // touched only by the loop thread
  std::map<int64_t, ActiveRequest> active_;  // loop thread only

  mutable std::mutex mutex_;  // guards the fields below
  std::condition_variable wake_;
  std::deque<PendingRequest> pending_;
  std::vector<std::pair<int64_t, FinishReason>> pending_aborts_;
  bool stopping_ = false;
  int64_t next_request_id_ = 1;
  int32_t num_scheduler_waiting_ = 0;  // copy of the scheduler's queue length, for submit()
  EngineMetrics metrics_;

  std::atomic<bool> running_{false};
  std::thread thread_;
};

}  // namespace crosspoint
