// Draws the next token of one sequence with that request's parameters. The uniform number
// comes from a generator seeded by (request seed, output token index) alone, so the token
// does not depend on what else is in the batch, and a preempted request that recomputes
// draws exactly the token it drew (or would have drawn) before.
#pragma once

#include <cstdint>

#include "kernels/sampling.h"
#include "scheduler/request_sampling_params.h"

namespace crosspoint {

// The seed of the generator for output token output_token_idx of a request.
uint64_t token_rng_seed(uint64_t request_seed, int32_t output_token_idx);

// A request's parameters as the sampling kernels (CPU and CUDA) take them.
SamplingParams kernel_sampling_params(const RequestSamplingParams& params);

// The uniform number in [0, 1) that draws output token output_token_idx of a request.
float token_uniform(const RequestSamplingParams& params, int32_t output_token_idx);

// logits: [vocab_size] f32 of the sequence's last token.
int32_t sample_request_token(const float* logits, int32_t vocab_size, const RequestSamplingParams& params,
                             int32_t output_token_idx);

}  // namespace crosspoint
