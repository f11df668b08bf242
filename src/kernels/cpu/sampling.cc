#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/sampling.h"

namespace crosspoint {

// Same arithmetic as sample_token_ref, but only the candidates that can survive are sorted:
// the min-p survivors and the top_k when set, else a growing prefix (64, 256, ...) until it
// holds top_p of the mass.
int32_t sample_token(const float* logits, int64_t vocab_size, const SamplingParams& params, float uniform) {
  if (params.temperature == 0.0f) return argmax(logits, vocab_size);
  const auto more_likely = [&](int32_t a, int32_t b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  };
  float max_logit = logits[0];
  for (int64_t i = 1; i < vocab_size; ++i) max_logit = std::max(max_logit, logits[i]);
  double total = 0.0;
  for (int64_t i = 0; i < vocab_size; ++i)
    total += std::exp((static_cast<double>(logits[i]) - max_logit) / params.temperature);

  std::vector<int32_t> order(vocab_size);
  for (int64_t i = 0; i < vocab_size; ++i) order[i] = static_cast<int32_t>(i);
  const auto prob = [&](int32_t id) {
    return std::exp((static_cast<double>(logits[id]) - max_logit) / params.temperature);
  };
  int64_t top_k = (params.top_k > 0 && params.top_k < vocab_size) ? params.top_k : vocab_size;
  if (params.min_p > 0.0f) {
    // The min-p survivors are a most-likely prefix of the order; counting them cuts it like top_k.
    int64_t above = 0;
    for (int64_t i = 0; i < vocab_size; ++i) above += prob(static_cast<int32_t>(i)) >= params.min_p ? 1 : 0;
    top_k = std::min(top_k, above);
  }

  int64_t sorted = std::min<int64_t>(top_k, params.top_p < 1.0f ? 64 : top_k);
  while (true) {
    std::partial_sort(order.begin(), order.begin() + sorted, order.end(), more_likely);
    if (sorted == top_k) break;
    // With top-k off the kept mass is the total; enough sorted once the prefix reaches top_p.
    double prefix = 0.0;
    for (int64_t i = 0; i < sorted; ++i) prefix += prob(order[i]);
    if (prefix / total >= params.top_p) break;
    sorted = std::min<int64_t>(top_k, sorted * 4);
  }
  std::vector<double> probs(sorted);
  for (int64_t i = 0; i < sorted; ++i) probs[i] = prob(order[i]);
  double kept_total = 0.0;
  if (top_k < vocab_size) {
    for (int64_t i = 0; i < top_k; ++i) kept_total += probs[i];
  } else {
    kept_total = total;
  }
  int64_t keep = sorted;
  if (params.top_p < 1.0f) {
    double cumulative = 0.0;
    for (int64_t i = 0; i < sorted; ++i) {
      cumulative += probs[i] / kept_total;
      if (cumulative >= params.top_p) {
        keep = i + 1;
        break;
      }
    }
  }
  double sum = 0.0;
  if (keep == vocab_size) {
    sum = total;
  } else {
    for (int64_t i = 0; i < keep; ++i) sum += probs[i];
  }
  const double target = static_cast<double>(uniform) * sum;
  double cumulative = 0.0;
  for (int64_t i = 0; i < keep; ++i) {
    cumulative += probs[i];
    if (target < cumulative) return order[i];
  }
  return order[keep - 1];
}

}  // namespace crosspoint
