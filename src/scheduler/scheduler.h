// Continuous batching with chunked prefill, FCFS, and preemption by recompute.
//
// Every step the scheduler hands out a token budget (max_num_batched_tokens): first to the
// running sequences in arrival order (one token for a decode, the rest of the prompt or as
// much as fits for an unfinished prefill), then to waiting sequences in arrival order while
// there is budget, a free sequence slot (max_num_seqs) and KV blocks. When a running
// sequence needs a block and none is free, the most recently arrived running sequence is
// preempted: its blocks are freed and it goes back to the front of the waiting queue, to
// be recomputed from its tokens later. With prefix caching, a sequence admitted from the
// waiting queue first takes the cached blocks holding its prompt's longest cached prefix of
// whole blocks (never its last token, whose logits are needed) and computes only the rest.
// No model is involved: the engine reports each step's sampled tokens back with on_step_done().
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "scheduler/batch_plan.h"
#include "scheduler/block_manager.h"
#include "scheduler/sequence.h"

namespace crosspoint {

struct SchedulerConfig {
  int32_t max_num_seqs = 256;             // sequences in one step
  int32_t max_num_batched_tokens = 2048;  // tokens computed in one step
  int32_t max_model_len = 2048;           // prompt + output tokens of one sequence
  int32_t num_blocks = 0;                 // KV blocks available
  int32_t block_size = 16;                // tokens per KV block
  bool enable_prefix_caching = false;     // reuse cached blocks of earlier sequences' prompts (BlockManager)
  // Prompt positions whose logprobs one step may compute, over every sequence of the step (each
  // is a logits row on top of the one per sampled sequence); a prefill chunk of a request that
  // wants prompt logprobs is cut to fit. 0 = no limit.
  int32_t max_prompt_logprob_rows = 0;
};

class Scheduler {
 public:
  explicit Scheduler(const SchedulerConfig& config);

  const SchedulerConfig& config() const { return config_; }
  const BlockManager& block_manager() const { return block_manager_; }

  // Whether a request of prompt_len tokens that may generate max_new_tokens can ever run
  // under config (thread-safe: touches no scheduler state). add() applies the same rules.
  static Status check_fits(const SchedulerConfig& config, int64_t prompt_len, int64_t max_new_tokens);

  // Queues a new sequence (FCFS by call order). Fails when the prompt is empty, or when
  // prompt + max_new_tokens exceed max_model_len or the whole KV cache. With prefix caching
  // the sequence shares cached blocks only with sequences of the same cache_salt.
  Status add(int64_t seq_id, std::vector<int32_t> prompt_token_ids, int32_t max_new_tokens,
             const RequestSamplingParams& sampling, std::string cache_salt = {});
  // The next step's plan; empty when nothing can run.
  BatchPlan schedule();
  // Records that the plan ran: advances num_computed_tokens and appends each sampled token
  // ([plan.seqs.size()] entries; ignored where !sample).
  void on_step_done(const BatchPlan& plan, const std::vector<int32_t>& sampled_token_ids);
  // Removes a sequence (finished or aborted) and frees its blocks. Unknown ids are ignored.
  void finish(int64_t seq_id);

  const Sequence* find(int64_t seq_id) const;
  int32_t num_running() const { return static_cast<int32_t>(running_.size()); }
  int32_t num_waiting() const { return static_cast<int32_t>(waiting_.size()); }
  bool has_unfinished() const { return !running_.empty() || !waiting_.empty(); }
  int64_t num_preemptions() const { return num_preemptions_; }
  // Prefix caching, in tokens: prompt tokens of admitted sequences looked up, and found.
  int64_t prefix_cache_queries() const { return prefix_cache_queries_; }
  int64_t prefix_cache_hits() const { return prefix_cache_hits_; }

 private:
  void preempt(Sequence& seq);
  ScheduledSequence make_scheduled(const Sequence& seq, int32_t num_new_tokens) const;
  // num_new tokens of seq from position start, cut so that its prompt logprob rows fit in
  // *rows_left (which it then lowers); unchanged when the request wants none or there is no limit.
  int32_t fit_prompt_logprob_rows(const Sequence& seq, int32_t start, int32_t num_new, int32_t* rows_left) const;

  SchedulerConfig config_;
  BlockManager block_manager_;
  std::map<int64_t, std::unique_ptr<Sequence>> sequences_;
  // Arrival order is kept in both queues: running_ front = oldest.
  std::deque<Sequence*> running_;
  std::deque<Sequence*> waiting_;
  int64_t num_preemptions_ = 0;
  int64_t prefix_cache_queries_ = 0;
  int64_t prefix_cache_hits_ = 0;
};

}  // namespace crosspoint
