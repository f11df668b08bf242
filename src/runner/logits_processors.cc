#include "runner/logits_processors.h"

#include <algorithm>
#include <vector>

#include "common/status.h"

namespace crosspoint {
namespace {

void check_token(int32_t id, size_t vocab) {
  CROSSPOINT_CHECK(id >= 0 && static_cast<size_t>(id) < vocab, "logits processing: token id outside the vocabulary");
}

// The distinct ids of `tokens`, ascending.
std::vector<int32_t> sorted_ids(std::span<const int32_t> tokens) {
  std::vector<int32_t> ids(tokens.begin(), tokens.end());
  std::sort(ids.begin(), ids.end());
  return ids;
}

}  // namespace

void apply_logits_processors(std::span<float> logits, const RequestSamplingParams& params,
                             std::span<const int32_t> prompt_token_ids, std::span<const int32_t> output_token_ids) {
  const size_t vocab = logits.size();
  const auto in_vocab = [vocab](int32_t id) { return id >= 0 && static_cast<size_t>(id) < vocab; };
  for (const LogitBias& entry : params.logit_bias) {
    if (in_vocab(entry.token_id)) logits[entry.token_id] += entry.bias;
  }
  if (!params.has_penalties()) return;
  // Output tokens sorted: each distinct id is one run, its length the id's count.
  const std::vector<int32_t> output = sorted_ids(output_token_ids);
  if (params.repetition_penalty != 1.0f) {
    for (int32_t id : output) check_token(id, vocab);
    std::vector<int32_t> seen(prompt_token_ids.begin(), prompt_token_ids.end());
    seen.insert(seen.end(), output.begin(), output.end());
    std::sort(seen.begin(), seen.end());
    seen.erase(std::unique(seen.begin(), seen.end()), seen.end());
    for (int32_t id : seen) {
      if (!in_vocab(id)) continue;
      float& logit = logits[id];
      logit = logit > 0.0f ? logit / params.repetition_penalty : logit * params.repetition_penalty;
    }
  }
  if (params.frequency_penalty == 0.0f && params.presence_penalty == 0.0f) return;
  for (size_t begin = 0; begin < output.size();) {
    size_t end = begin;
    while (end < output.size() && output[end] == output[begin]) ++end;
    const int32_t id = output[begin];
    check_token(id, vocab);
    const float count = static_cast<float>(end - begin);
    // Two subtractions, as vLLM's two tensor operations do them.
    logits[id] -= params.frequency_penalty * count;
    logits[id] -= params.presence_penalty;
    begin = end;
  }
}

}  // namespace crosspoint
