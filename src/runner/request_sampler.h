// Draws the next token of one sequence with that request's parameters: its logits processed
// (runner/logits_processors.h: logit_bias and penalties over its own tokens), then sampled
// (kernels/sampling.h: temperature, min-p, top-k, top-p). The uniform number
// comes from a generator seeded by (request seed, output token index) alone, so the token
// does not depend on what else is in the batch, and a preempted request that recomputes
// draws exactly the token it drew (or would have drawn) before.
#pragma once

#include <cstdint>
#include <span>

#include "kernels/sampling.h"
#include "scheduler/batch_plan.h"
#include "request/sampling_params.h"

namespace crosspoint {

// The seed of the generator for output token output_token_idx of a request.
uint64_t token_rng_seed(uint64_t request_seed, int32_t output_token_idx);

// A request's parameters as the sampling kernels (CPU and CUDA) take them.
SamplingParams kernel_sampling_params(const RequestSamplingParams& params);

// The uniform number in [0, 1) that draws output token output_token_idx of a request.
float token_uniform(const RequestSamplingParams& params, int32_t output_token_idx);

// logits: [vocab_size] f32 of the sequence's last token, left as they are (a request that
// processes its logits works on a copy). prompt_token_ids and output_token_ids: the sequence's
// prompt and the output_token_idx tokens it generated so far (read by the penalties only).
int32_t sample_request_token(const float* logits, int32_t vocab_size, const RequestSamplingParams& params,
                             int32_t output_token_idx, std::span<const int32_t> prompt_token_ids,
                             std::span<const int32_t> output_token_ids);

// The same for a scheduled sequence: its parameters, output index and tokens from the plan.
int32_t sample_scheduled_token(const float* logits, int32_t vocab_size, const ScheduledSequence& seq);

}  // namespace crosspoint
