// OpenAI `logprobs` of one generated token, as vLLM computes them by default ("raw" logprobs):
// the log-softmax of the model's logits for that position before temperature, top-k or top-p,
// in double precision on the host. The chosen token's logprob, plus the num_top most likely
// tokens (ties: lower token id first).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace crosspoint {

struct TokenLogprob {
  int32_t token_id = -1;
  double logprob = 0.0;  // -inf for a token whose logit is -inf
};

struct TokenLogprobs {
  TokenLogprob chosen;
  std::vector<TokenLogprob> top;  // most likely first; size min(num_top, vocab)
  // Tokens at least as likely as the chosen one, itself included (vLLM's `rank`: 1 = the most
  // likely); 0 when its logit is NaN.
  int64_t chosen_rank = 0;
};

// Most top logprobs a request may ask for (vLLM's default max_logprobs).
inline constexpr int32_t kMaxTopLogprobs = 20;

// logits: [vocab] of the position the chosen token was drawn for. A logit of -inf gives a
// logprob of -inf; when every logit is -inf (or some are +inf) the limit of the softmax is used
// (uniform over all, or over the +inf ones); NaN logits rank last and give NaN.
TokenLogprobs compute_token_logprobs(std::span<const float> logits, int32_t chosen_token, int32_t num_top);

}  // namespace crosspoint
