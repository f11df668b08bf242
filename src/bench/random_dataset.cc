#include "bench/random_dataset.h"

#include <cmath>
#include <cstdlib>
#include <algorithm>
#include <random>
#include <string>
#include <utility>

#include "common/status.h"
#include "tokenizer/tokenizer.h"

namespace crosspoint::bench {

namespace {

// Every id the tokenizer does not mark special.
std::vector<int32_t> regular_ids(const Tokenizer& tokenizer) {
  std::vector<int32_t> allowed;
  for (int32_t id = 0; id < tokenizer.vocab_size(); ++id) {
    if (!tokenizer.is_special(id)) allowed.push_back(id);
  }
  CROSSPOINT_CHECK(!allowed.empty(), "tokenizer has no regular tokens");
  return allowed;
}

// Text that encodes to target_len tokens (or as close as 10 nudges get): a run of consecutive
// regular ids from `start`, decoded, re-encoded, and cut or padded with random ids.
std::pair<std::string, int> text_of_length(const Tokenizer& tokenizer, const std::vector<int32_t>& allowed,
                                           int64_t start, int target_len, std::mt19937_64& rng) {
  std::uniform_int_distribution<size_t> pad_dist(0, allowed.size() - 1);
  std::vector<int32_t> ids(target_len);  // [target_len] token ids
  for (int k = 0; k < target_len; ++k) ids[k] = allowed[static_cast<size_t>(start + k) % allowed.size()];
  // Decoding and re-encoding can merge or split tokens (and invalid UTF-8 decodes to
  // U+FFFD); nudge up to 10 times and keep the attempt closest to the target.
  std::string text = tokenizer.decode(ids, /*skip_special=*/false);
  std::vector<int32_t> encoded = tokenizer.encode(text, /*parse_special=*/false);
  std::string best_text = text;
  int best_len = static_cast<int>(encoded.size());
  for (int attempt = 0; attempt < 10 && best_len != target_len; ++attempt) {
    if (static_cast<int>(encoded.size()) > target_len) {
      encoded.resize(target_len);
    } else {
      while (static_cast<int>(encoded.size()) < target_len) encoded.push_back(allowed[pad_dist(rng)]);
    }
    text = tokenizer.decode(encoded, /*skip_special=*/false);
    encoded = tokenizer.encode(text, /*parse_special=*/false);
    if (std::abs(static_cast<int>(encoded.size()) - target_len) < std::abs(best_len - target_len)) {
      best_text = text;
      best_len = static_cast<int>(encoded.size());
    }
  }
  return {best_text, best_len};
}

}  // namespace

std::vector<SampleRequest> sample_random(const Tokenizer& tokenizer, const RandomSampling& s) {
  CROSSPOINT_CHECK(s.range_ratio >= 0 && s.range_ratio < 1, "range ratio must be in [0, 1)");
  std::mt19937_64 rng(s.seed);
  const int vocab_size = tokenizer.vocab_size();
  const std::vector<int32_t> allowed = regular_ids(tokenizer);
  const double r = s.range_ratio;
  std::uniform_int_distribution<int> input_len_dist(static_cast<int>(std::floor(s.input_len * (1 - r))),
                                                    static_cast<int>(std::ceil(s.input_len * (1 + r))));
  std::uniform_int_distribution<int> output_len_dist(std::max(1, static_cast<int>(std::floor(s.output_len * (1 - r)))),
                                                     std::max(1, static_cast<int>(std::ceil(s.output_len * (1 + r)))));
  std::uniform_int_distribution<int> offset_dist(0, vocab_size - 1);

  std::vector<SampleRequest> samples;
  samples.reserve(s.num_requests);
  for (int i = 0; i < s.num_requests; ++i) {
    const int target_len = input_len_dist(rng);
    const int output_len = output_len_dist(rng);
    const int offset = offset_dist(rng);
    auto [text, len] = text_of_length(tokenizer, allowed, offset + i, target_len, rng);
    samples.push_back({std::move(text), len, output_len});
  }
  return samples;
}

std::vector<SampleRequest> sample_prefix_repetition(const Tokenizer& tokenizer, const PrefixRepetitionSampling& s) {
  CROSSPOINT_CHECK(s.num_prefixes >= 1 && s.prefix_len >= 1 && s.suffix_len >= 0 && s.output_len >= 1,
                   "prefix repetition: bad shape");
  std::mt19937_64 rng(s.seed);
  const std::vector<int32_t> allowed = regular_ids(tokenizer);
  std::uniform_int_distribution<int64_t> offset_dist(0, static_cast<int64_t>(allowed.size()) - 1);
  std::vector<SampleRequest> samples;
  samples.reserve(s.num_requests);
  for (int p = 0; p < s.num_prefixes; ++p) {
    const std::string prefix = text_of_length(tokenizer, allowed, offset_dist(rng), s.prefix_len, rng).first;
    const int count = s.num_requests / s.num_prefixes + (p < s.num_requests % s.num_prefixes ? 1 : 0);
    for (int i = 0; i < count; ++i) {
      std::string prompt = prefix;
      if (s.suffix_len > 0) prompt += text_of_length(tokenizer, allowed, offset_dist(rng), s.suffix_len, rng).first;
      const int len = static_cast<int>(tokenizer.encode(prompt, /*parse_special=*/false).size());
      samples.push_back({std::move(prompt), len, s.output_len});
    }
  }
  std::shuffle(samples.begin(), samples.end(), rng);
  return samples;
}

}  // namespace crosspoint::bench
