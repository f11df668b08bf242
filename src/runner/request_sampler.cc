#include "runner/request_sampler.h"

#include "kernels/sampling.h"

namespace crosspoint {

uint64_t token_rng_seed(uint64_t request_seed, int32_t output_token_idx) {
  // Mix the index in with an odd constant; SamplingRng runs splitmix64 on the result.
  return request_seed ^ (0x9E3779B97F4A7C15ull * (static_cast<uint64_t>(output_token_idx) + 1));
}

int32_t sample_request_token(const float* logits, int32_t vocab_size, const RequestSamplingParams& params,
                             int32_t output_token_idx) {
  if (params.is_greedy()) return argmax(logits, vocab_size);
  SamplingParams kernel_params;
  kernel_params.temperature = params.temperature;
  kernel_params.top_k = params.top_k < 0 ? 0 : params.top_k;
  kernel_params.top_p = params.top_p;
  SamplingRng rng(token_rng_seed(params.seed, output_token_idx));
  return sample_token(logits, vocab_size, kernel_params, rng.next_uniform());
}

}  // namespace crosspoint
