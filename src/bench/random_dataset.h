// vLLM's random dataset: per request an input length uniform in
// [floor(L(1-r)), ceil(L(1+r))] and an output length uniform in
// [max(1, floor(O(1-r))), max(1, ceil(O(1+r)))]; the prompt is a run of consecutive
// non-special token ids starting at a random offset, decoded to text, re-encoded and
// truncated or padded until it has the drawn length. Our generator differs from numpy's,
// so the same seed gives different (equally distributed) prompts than vLLM.
#pragma once

#include <cstdint>
#include <vector>

#include "bench/sample_request.h"

namespace crosspoint {
class Tokenizer;
}

namespace crosspoint::bench {

struct RandomSampling {
  int num_requests = 0;
  int input_len = 1024;
  int output_len = 128;
  double range_ratio = 0.0;  // in [0, 1)
  uint64_t seed = 0;
};

std::vector<SampleRequest> sample_random(const Tokenizer& tokenizer, const RandomSampling& sampling);

// vLLM's prefix_repetition dataset (requests sharing prompt prefixes, for prefix caching):
// num_prefixes random prefixes of prefix_len tokens, each the start of num_requests /
// num_prefixes prompts (the first prefixes one more when it does not divide) followed by a
// random suffix of suffix_len tokens; every output output_len tokens; the requests shuffled.
struct PrefixRepetitionSampling {
  int num_requests = 0;
  int prefix_len = 256;
  int suffix_len = 256;
  int num_prefixes = 10;
  int output_len = 128;
  uint64_t seed = 0;
};

std::vector<SampleRequest> sample_prefix_repetition(const Tokenizer& tokenizer, const PrefixRepetitionSampling& s);

}  // namespace crosspoint::bench
