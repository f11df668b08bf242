// How the next token of one request is drawn from the model's logits. Plain data set by the
// server, kept by the scheduler with each sequence and read by the runner, so every sequence of
// a batch is sampled independently.
#pragma once

#include <cstdint>
#include <vector>

namespace crosspoint {

// One entry of OpenAI's logit_bias: added to the token's logit before anything else.
struct LogitBias {
  int32_t token_id = 0;
  float bias = 0.0f;
};

struct RequestSamplingParams {
  // 0 = greedy (argmax); otherwise logits are divided by it before the softmax.
  float temperature = 1.0f;
  // Keep the smallest set of most likely tokens whose probability reaches top_p; 1 = all.
  float top_p = 1.0f;
  // Keep the top_k most likely tokens; 0 (or -1) = all.
  int32_t top_k = 0;
  // The request's random stream: token i of the output is drawn with a generator seeded
  // from (seed, i), so a request's output depends only on its own seed and tokens, never on
  // the rest of the batch or on a preemption.
  uint64_t seed = 0;
  // OpenAI logprobs of each generated token: -1 = none; n >= 0 = the chosen token's logprob
  // plus the n most likely tokens' (request/logprobs.h). Does not change the tokens.
  int32_t num_logprobs = -1;
  // Drop the tokens whose probability (after temperature) is below min_p times the most
  // likely token's; 0 = off.
  float min_p = 0.0f;
  // Applied to the logits in vLLM's order before temperature (runner/logits_processors.h):
  // logit_bias, then repetition_penalty over prompt and output tokens (1 = off), then
  // frequency_penalty * count and presence_penalty * (count > 0) over the output tokens.
  std::vector<LogitBias> logit_bias;
  float repetition_penalty = 1.0f;
  float frequency_penalty = 0.0f;
  float presence_penalty = 0.0f;

  // Prompt logprobs (vLLM's `prompt_logprobs`; OpenAI `echo` with `logprobs`): -1 = none; n >= 0 =
  // for every prompt token after the first, its logprob given the tokens before it plus the n
  // most likely tokens'. Computed while the prompt is prefilled; does not change the tokens.
  int32_t num_prompt_logprobs = -1;

  bool is_greedy() const { return temperature == 0.0f; }
  bool wants_logprobs() const { return num_logprobs >= 0; }
  bool wants_prompt_logprobs() const { return num_prompt_logprobs >= 0; }
  bool has_penalties() const {
    return repetition_penalty != 1.0f || frequency_penalty != 0.0f || presence_penalty != 0.0f;
  }
  // True when the logits are changed before sampling (bias or penalties).
  bool processes_logits() const { return !logit_bias.empty() || has_penalties(); }
};

// The defaults (temperature 1, nothing filtered, no logprobs): what a sequence scheduled
// without a request sees.
inline const RequestSamplingParams kDefaultRequestSamplingParams{};

}  // namespace crosspoint
