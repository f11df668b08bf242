// The scheduler's decision for one engine step, handed to the runner: which sequences run,
// which of their tokens are computed now (a prefill chunk or one decode token are the same
// thing: a run of tokens starting at num_computed_tokens), where their K/V blocks are, and
// which of them get a new token sampled at the end of the step.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "request/sampling_params.h"

namespace crosspoint {

struct ScheduledSequence {
  int64_t seq_id = 0;
  // Tokens already in the KV cache before this step: the position of token_ids[0].
  int32_t num_computed_tokens = 0;
  // [num_new_tokens] the tokens computed this step (prompt chunk, recomputed tokens after a
  // preemption, or the last sampled token for a decode).
  std::vector<int32_t> token_ids;
  // Physical KV block of each logical block; covers num_computed_tokens + token_ids.size().
  std::vector<int32_t> block_table;
  // True when this step reaches the end of the sequence's known tokens, so the next token
  // is sampled; false for a prefill chunk that stops short of the end.
  bool sample = false;
  // Index, among the sequence's generated tokens, of the token sampled this step (drives
  // the per-request random stream so recomputation draws the same token).
  int32_t output_token_idx = 0;
  // The request's sampling parameters: a view of the scheduler's copy, valid until
  // Scheduler::on_step_done for this plan (never copied per step); defaults when unset.
  const RequestSamplingParams* sampling_params = &kDefaultRequestSamplingParams;
  const RequestSamplingParams& sampling() const { return *sampling_params; }
  // The sequence's prompt and the tokens it generated before this step, for the penalties.
  // Views of the scheduler's copy: valid until Scheduler::on_step_done for this plan.
  std::span<const int32_t> prompt_token_ids;
  std::span<const int32_t> output_token_ids;
  // Prompt logprobs (sampling.wants_prompt_logprobs()): the prompt token that follows each of the
  // first prompt_logprob_targets.size() tokens of token_ids, whose logprob is wanted at that
  // position; empty when the request wants none or this step holds no prompt position before
  // the prompt's last token.
  std::vector<int32_t> prompt_logprob_targets;

  int32_t num_new_tokens() const { return static_cast<int32_t>(token_ids.size()); }
  // Tokens in the KV cache once this step is done.
  int32_t context_len() const { return num_computed_tokens + num_new_tokens(); }
};

struct BatchPlan {
  // Sequences of this step, in scheduling order (running ones first, then newly admitted).
  std::vector<ScheduledSequence> seqs;
  // Sum of num_new_tokens over seqs; never above max_num_batched_tokens.
  int32_t num_batched_tokens = 0;
  // Of num_batched_tokens, those that are prompt or recomputed tokens (not decodes).
  int32_t num_prefill_tokens = 0;

  bool empty() const { return seqs.empty(); }
};

}  // namespace crosspoint
