// The logprobs a request gets back for a token: the chosen token's and the most likely
// ones', and how many of those a request may ask for. Computed by runner/token_logprobs.h,
// carried out of the engine with each update, written as JSON by the server.
#pragma once

#include <cstdint>
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

}  // namespace crosspoint
