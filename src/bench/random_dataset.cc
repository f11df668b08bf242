#include "bench/random_dataset.h"

#include <cmath>
#include <cstdlib>
#include <random>

#include "common/status.h"
#include "tokenizer/tokenizer.h"

namespace crosspoint::bench {

std::vector<SampleRequest> sample_random(const Tokenizer& tokenizer, const RandomSampling& s) {
  CROSSPOINT_CHECK(s.range_ratio >= 0 && s.range_ratio < 1, "range ratio must be in [0, 1)");
  std::mt19937_64 rng(s.seed);
  const int vocab_size = tokenizer.vocab_size();
  std::vector<int32_t> allowed;  // every non-special id
  for (int32_t id = 0; id < vocab_size; ++id) {
    if (!tokenizer.is_special(id)) allowed.push_back(id);
  }
  CROSSPOINT_CHECK(!allowed.empty(), "tokenizer has no regular tokens");
  const double r = s.range_ratio;
  std::uniform_int_distribution<int> input_len_dist(static_cast<int>(std::floor(s.input_len * (1 - r))),
                                                    static_cast<int>(std::ceil(s.input_len * (1 + r))));
  std::uniform_int_distribution<int> output_len_dist(std::max(1, static_cast<int>(std::floor(s.output_len * (1 - r)))),
                                                     std::max(1, static_cast<int>(std::ceil(s.output_len * (1 + r)))));
  std::uniform_int_distribution<int> offset_dist(0, vocab_size - 1);
  std::uniform_int_distribution<size_t> pad_dist(0, allowed.size() - 1);

  std::vector<SampleRequest> samples;
  samples.reserve(s.num_requests);
  for (int i = 0; i < s.num_requests; ++i) {
    const int target_len = input_len_dist(rng);
    const int output_len = output_len_dist(rng);
    const int offset = offset_dist(rng);
    std::vector<int32_t> ids(target_len);  // [target_len] token ids
    for (int k = 0; k < target_len; ++k) ids[k] = allowed[(offset + i + k) % allowed.size()];
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
    samples.push_back({std::move(best_text), best_len, output_len});
  }
  return samples;
}

}  // namespace crosspoint::bench
