// OpenAI `logprobs` of one generated token, as vLLM computes them by default ("raw" logprobs):
// the log-softmax of the model's logits for that position before temperature, top-k or top-p,
// in double precision on the host. The chosen token's logprob, plus the num_top most likely
// tokens (ties: lower token id first).
#pragma once

#include <cstdint>
#include <span>

#include "request/logprobs.h"

namespace crosspoint {

// logits: [vocab] of the position the chosen token was drawn for. A logit of -inf gives a
// logprob of -inf; when every logit is -inf (or some are +inf) the limit of the softmax is used
// (uniform over all, or over the +inf ones); NaN logits rank last and give NaN.
TokenLogprobs compute_token_logprobs(std::span<const float> logits, int32_t chosen_token, int32_t num_top);

}  // namespace crosspoint
