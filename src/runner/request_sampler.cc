#include "runner/request_sampler.h"

#include <vector>

#include "runner/logits_processors.h"

namespace crosspoint {

uint64_t token_rng_seed(uint64_t request_seed, int32_t output_token_idx) {
  // Mix the index in with an odd constant; SamplingRng runs splitmix64 on the result.
  return request_seed ^ (0x9E3779B97F4A7C15ull * (static_cast<uint64_t>(output_token_idx) + 1));
}

SamplingParams kernel_sampling_params(const RequestSamplingParams& params) {
  SamplingParams out;
  out.temperature = params.temperature;
  out.top_k = params.top_k < 0 ? 0 : params.top_k;  // the API's -1 means off
  out.top_p = params.top_p;
  out.min_p = params.min_p;
  return out;
}

float token_uniform(const RequestSamplingParams& params, int32_t output_token_idx) {
  return SamplingRng(token_rng_seed(params.seed, output_token_idx)).next_uniform();
}

int32_t sample_request_token(const float* logits, int32_t vocab_size, const RequestSamplingParams& params,
                             int32_t output_token_idx, std::span<const int32_t> prompt_token_ids,
                             std::span<const int32_t> output_token_ids) {
  if (params.processes_logits()) {
    // One copy per thread, reused: the runner's rows stay raw for the logprobs.
    thread_local std::vector<float> processed;
    processed.assign(logits, logits + vocab_size);
    apply_logits_processors(processed, params, prompt_token_ids, output_token_ids);
    logits = processed.data();
  }
  if (params.is_greedy()) return argmax(logits, vocab_size);
  return sample_token(logits, vocab_size, kernel_sampling_params(params), token_uniform(params, output_token_idx));
}

int32_t sample_scheduled_token(const float* logits, int32_t vocab_size, const ScheduledSequence& seq) {
  return sample_request_token(logits, vocab_size, seq.sampling(), seq.output_token_idx, seq.prompt_token_ids,
                              seq.output_token_ids);
}

}  // namespace crosspoint
