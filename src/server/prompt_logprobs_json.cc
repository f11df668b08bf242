#include "server/prompt_logprobs_json.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace crosspoint {
namespace {

using json = nlohmann::json;

json clamped(double logprob) {
  if (std::isnan(logprob)) return nullptr;
  return std::max(logprob, -9999.0);
}

json entry(const Tokenizer& tokenizer, int32_t id, double logprob, int64_t rank) {
  const int32_t ids[1] = {id};
  return {{"logprob", clamped(logprob)}, {"rank", rank}, {"decoded_token", tokenizer.decode(ids, false)}};
}

}  // namespace

json prompt_logprobs_json(const Tokenizer& tokenizer, std::span<const TokenLogprobs> prompt, int32_t num_top) {
  json out = json::array({nullptr});
  for (const TokenLogprobs& t : prompt) {
    json position = json::object();
    position[std::to_string(t.chosen.token_id)] = entry(tokenizer, t.chosen.token_id, t.chosen.logprob, t.chosen_rank);
    const size_t n = std::min(t.top.size(), static_cast<size_t>(std::max(num_top, 0)));
    for (size_t i = 0; i < n; ++i) {
      const TokenLogprob& lp = t.top[i];
      position[std::to_string(lp.token_id)] = entry(tokenizer, lp.token_id, lp.logprob, static_cast<int64_t>(i) + 1);
    }
    out.push_back(std::move(position));
  }
  return out;
}

}  // namespace crosspoint
