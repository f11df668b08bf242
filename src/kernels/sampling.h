// Next-token sampling from logits: temperature, min-p, top-k, top-p (nucleus), with a seeded,
// platform-independent RNG. Shared by `crosspoint generate` and the serving engine.
//
// Order (as vLLM applies it): logits / temperature -> drop the tokens whose probability is
// below min_p times the largest one -> keep the top_k most likely of the rest ->
// keep the smallest most-likely prefix whose probability reaches top_p -> renormalise ->
// draw by inverse CDF with one uniform number, candidates walked from most to least likely
// (ties: lower token id first). temperature == 0 is greedy (argmax, lowest id on ties).
#pragma once

#include <cstdint>

#include "common/status.h"

namespace crosspoint {

struct SamplingParams {
  float temperature = 1.0f;  // 0 = greedy
  int32_t top_k = 0;         // 0 or >= vocab = off
  float top_p = 1.0f;        // (0, 1]; 1 = off
  // [0, 1]; 0 = off. A token is kept when exp((logit - max logit) / temperature) >= min_p,
  // i.e. its probability is at least min_p times the most likely token's.
  float min_p = 0.0f;
};

// invalid_argument for negative or non-finite temperature, top_p outside (0, 1], top_k < 0,
// min_p outside [0, 1].
Status validate_sampling_params(const SamplingParams& params);

// xoshiro256** seeded through splitmix64: the same seed gives the same draws everywhere.
class SamplingRng {
 public:
  explicit SamplingRng(uint64_t seed);
  uint64_t next_u64();
  // Uniform in [0, 1) with 24 random bits.
  float next_uniform();

 private:
  uint64_t state_[4];
};

// Index of the largest logit (lowest index on ties).
int32_t argmax(const float* logits /*[vocab_size] f32*/, int64_t vocab_size);

// Token drawn from logits [vocab_size] f32 with the uniform number u in [0, 1).
// Fast version: partial sorts only as far as top_k / top_p need.
int32_t sample_token(const float* logits, int64_t vocab_size, const SamplingParams& params, float uniform);
// Reference: full sort of the whole vocabulary.
int32_t sample_token_ref(const float* logits, int64_t vocab_size, const SamplingParams& params, float uniform);

}  // namespace crosspoint
