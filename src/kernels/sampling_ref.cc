#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "kernels/sampling.h"

namespace crosspoint {

Status validate_sampling_params(const SamplingParams& p) {
  if (!std::isfinite(p.temperature) || p.temperature < 0.0f)
    return invalid_argument("sampling: temperature must be finite and >= 0");
  if (!(p.top_p > 0.0f && p.top_p <= 1.0f)) return invalid_argument("sampling: top_p must be in (0, 1]");
  if (p.top_k < 0) return invalid_argument("sampling: top_k must be >= 0");
  if (!(p.min_p >= 0.0f && p.min_p <= 1.0f)) return invalid_argument("sampling: min_p must be in [0, 1]");
  return Status::ok();
}

namespace {

uint64_t splitmix64(uint64_t& x) {
  uint64_t z = (x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

}  // namespace

SamplingRng::SamplingRng(uint64_t seed) {
  for (auto& word : state_) word = splitmix64(seed);
}

uint64_t SamplingRng::next_u64() {
  const uint64_t result = rotl(state_[1] * 5, 7) * 9;
  const uint64_t t = state_[1] << 17;
  state_[2] ^= state_[0];
  state_[3] ^= state_[1];
  state_[1] ^= state_[2];
  state_[0] ^= state_[3];
  state_[2] ^= t;
  state_[3] = rotl(state_[3], 45);
  return result;
}

float SamplingRng::next_uniform() { return static_cast<float>(next_u64() >> 40) * (1.0f / 16777216.0f); }

int32_t argmax(const float* logits, int64_t vocab_size) {
  int64_t best = 0;
  for (int64_t i = 1; i < vocab_size; ++i)
    if (logits[i] > logits[best]) best = i;
  return static_cast<int32_t>(best);
}

int32_t sample_token_ref(const float* logits, int64_t vocab_size, const SamplingParams& params, float uniform) {
  if (params.temperature == 0.0f) return argmax(logits, vocab_size);
  // Probabilities in double, most likely first (ties: lower id first).
  std::vector<int32_t> order(vocab_size);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
  const double max_logit = logits[order[0]];
  std::vector<double> probs(vocab_size);
  for (int64_t i = 0; i < vocab_size; ++i)
    probs[i] = std::exp((static_cast<double>(logits[order[i]]) - max_logit) / params.temperature);
  int64_t keep = vocab_size;
  // min-p: probs[] are relative to the most likely token, so the kept tokens are those >= min_p.
  if (params.min_p > 0.0f) {
    int64_t above = 0;
    while (above < vocab_size && probs[above] >= params.min_p) ++above;
    keep = above;
  }
  if (params.top_k > 0 && params.top_k < keep) keep = params.top_k;
  // Renormalise over the min-p and top-k survivors before applying top-p, as sequential filters do.
  // Sums over the whole vocabulary run in id order (as the fast version does them).
  double total_in_id_order = 0.0;
  for (int64_t i = 0; i < vocab_size; ++i)
    total_in_id_order += std::exp((static_cast<double>(logits[i]) - max_logit) / params.temperature);
  double kept_total = 0.0;
  for (int64_t i = 0; i < keep; ++i) kept_total += probs[i];
  if (keep == vocab_size) kept_total = total_in_id_order;
  if (params.top_p < 1.0f) {
    double cumulative = 0.0;
    for (int64_t i = 0; i < keep; ++i) {
      cumulative += probs[i] / kept_total;
      if (cumulative >= params.top_p) {
        keep = i + 1;
        break;
      }
    }
  }
  double sum = 0.0;
  for (int64_t i = 0; i < keep; ++i) sum += probs[i];
  if (keep == vocab_size) sum = total_in_id_order;
  const double target = static_cast<double>(uniform) * sum;
  double cumulative = 0.0;
  for (int64_t i = 0; i < keep; ++i) {
    cumulative += probs[i];
    if (target < cumulative) return order[i];
  }
  return order[keep - 1];
}

}  // namespace crosspoint
