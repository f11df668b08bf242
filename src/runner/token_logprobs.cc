#include "runner/token_logprobs.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "common/status.h"

namespace crosspoint {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// The log of the softmax's denominator, max + log(sum(exp(x - max))), in double; the two
// limits that formula cannot reach are handled by the caller through `max`.
struct LogSumExp {
  double max = -kInf;
  double value = -kInf;
  int64_t num_max = 0;  // logits equal to max (used when max is infinite)
};

LogSumExp log_sum_exp(std::span<const float> logits) {
  LogSumExp out;
  for (float x : logits) {
    if (std::isnan(x)) continue;
    if (x > out.max) {
      out.max = x;
      out.num_max = 1;
    } else if (x == out.max) {
      ++out.num_max;
    }
  }
  if (!std::isfinite(out.max)) return out;
  double sum = 0.0;
  for (float x : logits) {
    if (!std::isnan(x)) sum += std::exp(static_cast<double>(x) - out.max);  // exp(-inf) = 0
  }
  out.value = out.max + std::log(sum);
  return out;
}

double logprob_of(float logit, const LogSumExp& lse, int64_t vocab) {
  if (std::isnan(logit)) return std::numeric_limits<double>::quiet_NaN();
  if (lse.max == kInf) return logit == kInf ? -std::log(static_cast<double>(lse.num_max)) : -kInf;
  if (lse.max == -kInf) return -std::log(static_cast<double>(vocab));  // every logit -inf: all equal
  return static_cast<double>(logit) - lse.value;
}

// Ranking key: larger logit first, NaN below everything (keeps the order strict and weak).
double rank_key(float logit) { return std::isnan(logit) ? -kInf : static_cast<double>(logit); }

}  // namespace

TokenLogprobs compute_token_logprobs(std::span<const float> logits, int32_t chosen_token, int32_t num_top) {
  const int64_t vocab = static_cast<int64_t>(logits.size());
  CROSSPOINT_CHECK(chosen_token >= 0 && chosen_token < vocab,
                   "compute_token_logprobs: chosen token outside the vocabulary");
  const LogSumExp lse = log_sum_exp(logits);
  TokenLogprobs out;
  out.chosen = {chosen_token, logprob_of(logits[chosen_token], lse, vocab)};
  const float chosen_logit = logits[chosen_token];
  out.chosen_rank = std::count_if(logits.begin(), logits.end(), [&](float x) { return x >= chosen_logit; });
  const int64_t n = std::clamp<int64_t>(num_top, 0, vocab);
  if (n == 0) return out;
  std::vector<int32_t> ids(static_cast<size_t>(vocab));
  std::iota(ids.begin(), ids.end(), 0);
  std::partial_sort(ids.begin(), ids.begin() + n, ids.end(), [&](int32_t a, int32_t b) {
    const double ka = rank_key(logits[a]), kb = rank_key(logits[b]);
    return ka > kb || (ka == kb && a < b);
  });
  out.top.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) out.top.push_back({ids[i], logprob_of(logits[ids[i]], lse, vocab)});
  return out;
}

}  // namespace crosspoint
