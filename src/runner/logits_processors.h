// What a request does to its logits before they are sampled, in vLLM v1's order
// (vllm/v1/sample/sampler.py: logits processors, then apply_all_penalties):
//   1. logit_bias: each entry's bias added to its token's logit;
//   2. repetition_penalty over every token of the prompt and of the output so far: a
//      positive logit divided by the penalty, a negative one multiplied (transformers'
//      RepetitionPenaltyLogitsProcessor, vLLM's apply_repetition_penalties);
//   3. over the output tokens only (OpenAI's definition, vLLM's apply_penalties):
//      logit -= frequency_penalty * count + presence_penalty * (count > 0).
// Temperature, min-p, top-k and top-p come after, in the sampler (kernels/sampling.h).
// Everything depends on the sequence's own tokens only, never on the rest of the batch.
#pragma once

#include <cstdint>
#include <span>

#include "request/sampling_params.h"

namespace crosspoint {

// logits [vocab] f32 of one sequence, changed in place. Bias entries and prompt ids outside
// [0, vocab) have no logit and change nothing (the server refuses such bias ids, and the engine
// such prompt ids, whenever it knows the model's vocabulary); an output id outside it is a broken
// invariant (the sampler drew it from these logits).
void apply_logits_processors(std::span<float> logits, const RequestSamplingParams& params,
                             std::span<const int32_t> prompt_token_ids, std::span<const int32_t> output_token_ids);

}  // namespace crosspoint
