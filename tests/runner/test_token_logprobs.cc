// runner/token_logprobs.h against an independent reference: long double log-softmax by the
// definition (log(exp(x_i) / sum exp(x_j)), no max shift), a full sort for the top tokens, and
// hand-worked cases for ties, -inf logits and the infinite limits.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "runner/token_logprobs.h"

namespace crosspoint {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// log(exp(x_i) / sum_j exp(x_j)) in long double; the logits used stay where exp() is finite.
std::vector<long double> reference_logprobs(const std::vector<float>& logits) {
  long double sum = 0.0L;
  for (float x : logits) sum += std::exp(static_cast<long double>(x));
  std::vector<long double> out;
  for (float x : logits) out.push_back(std::log(std::exp(static_cast<long double>(x)) / sum));
  return out;
}

// Every id sorted by (logprob descending, id ascending).
std::vector<int32_t> reference_order(const std::vector<long double>& logprobs) {
  std::vector<int32_t> ids(logprobs.size());
  std::iota(ids.begin(), ids.end(), 0);
  std::stable_sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) { return logprobs[a] > logprobs[b]; });
  return ids;
}

TEST(TokenLogprobs, MatchesTheDefinitionOnRandomLogits) {
  std::mt19937 rng(5);
  for (int trial = 0; trial < 20; ++trial) {
    const int vocab = 1 + static_cast<int>(rng() % 3000);
    std::uniform_real_distribution<float> dist(-30.0f, 30.0f);
    std::vector<float> logits(vocab);
    for (float& x : logits) x = dist(rng);
    const auto ref = reference_logprobs(logits);
    const auto order = reference_order(ref);
    const int32_t chosen = static_cast<int32_t>(rng() % vocab);
    const int32_t num_top = static_cast<int32_t>(rng() % 21);
    const TokenLogprobs got = compute_token_logprobs(logits, chosen, num_top);
    EXPECT_EQ(got.chosen.token_id, chosen);
    EXPECT_NEAR(got.chosen.logprob, static_cast<double>(ref[chosen]), 1e-12 * (1 + std::fabs(ref[chosen])));
    ASSERT_EQ(got.top.size(), static_cast<size_t>(std::min(num_top, vocab)));
    for (size_t i = 0; i < got.top.size(); ++i) {
      EXPECT_EQ(got.top[i].token_id, order[i]) << "rank " << i;
      EXPECT_NEAR(got.top[i].logprob, static_cast<double>(ref[order[i]]), 1e-12 * (1 + std::fabs(ref[order[i]])));
    }
  }
}

TEST(TokenLogprobs, AreDoublePrecisionNotFloat) {
  // A large vocabulary of nearly equal logits: a float sum would be off by far more than 1e-10.
  std::vector<float> logits(150000, 0.0f);
  logits[7] = 1e-3f;
  const TokenLogprobs got = compute_token_logprobs(logits, 7, 0);
  const long double sum = 149999.0L + std::exp(static_cast<long double>(1e-3f));
  EXPECT_NEAR(got.chosen.logprob, static_cast<double>(static_cast<long double>(1e-3f) - std::log(sum)), 1e-10);
}

TEST(TokenLogprobs, TiesGoToTheLowerTokenId) {
  const std::vector<float> logits = {1.0f, 3.0f, 2.0f, 3.0f, 3.0f, 2.0f};
  const TokenLogprobs got = compute_token_logprobs(logits, 5, 5);
  ASSERT_EQ(got.top.size(), 5u);
  const int32_t want[] = {1, 3, 4, 2, 5};
  for (int i = 0; i < 5; ++i) EXPECT_EQ(got.top[i].token_id, want[i]) << "rank " << i;
  EXPECT_EQ(got.top[0].logprob, got.top[1].logprob);
  EXPECT_EQ(got.chosen.logprob, got.top[4].logprob);
}

TEST(TokenLogprobs, MinusInfinityLogitsAreImpossibleTokens) {
  // What top-k masking or a banned token leaves: the others share all the probability.
  const std::vector<float> logits = {kNegInf, 0.0f, kNegInf, std::log(3.0f)};
  const TokenLogprobs got = compute_token_logprobs(logits, 0, 4);
  EXPECT_EQ(got.chosen.logprob, -std::numeric_limits<double>::infinity());
  ASSERT_EQ(got.top.size(), 4u);
  EXPECT_EQ(got.top[0].token_id, 3);
  EXPECT_NEAR(got.top[0].logprob, std::log(0.75), 1e-7);  // log(3) rounded to float, then exact
  EXPECT_NEAR(got.top[1].logprob, std::log(0.25), 1e-7);
  EXPECT_EQ(got.top[2].token_id, 0);  // the -inf ones last, lower id first
  EXPECT_EQ(got.top[3].token_id, 2);
  EXPECT_EQ(got.top[3].logprob, -std::numeric_limits<double>::infinity());
}

TEST(TokenLogprobs, InfiniteLimits) {
  const std::vector<float> all_impossible(4, kNegInf);  // softmax of equal logits: uniform
  EXPECT_NEAR(compute_token_logprobs(all_impossible, 2, 0).chosen.logprob, std::log(0.25), 1e-15);
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> two_infinite = {1.0f, inf, 5.0f, inf};  // the limit: the +inf ones share it
  const TokenLogprobs got = compute_token_logprobs(two_infinite, 3, 3);
  EXPECT_NEAR(got.chosen.logprob, std::log(0.5), 1e-15);
  EXPECT_EQ(got.top[0].token_id, 1);
  EXPECT_EQ(got.top[2].logprob, -std::numeric_limits<double>::infinity());
}

TEST(TokenLogprobs, NanLogitsRankLastAndLeaveTheOthersAlone) {
  const std::vector<float> logits = {std::numeric_limits<float>::quiet_NaN(), 0.0f, 0.0f};
  const TokenLogprobs got = compute_token_logprobs(logits, 0, 3);
  EXPECT_TRUE(std::isnan(got.chosen.logprob));
  EXPECT_EQ(got.top[0].token_id, 1);
  EXPECT_NEAR(got.top[0].logprob, std::log(0.5), 1e-15);
  EXPECT_EQ(got.top[2].token_id, 0);
}

TEST(TokenLogprobs, TopIsCutAtTheVocabularyAndZeroGivesOnlyTheChosenToken) {
  const std::vector<float> logits = {0.5f, -0.5f};
  EXPECT_EQ(compute_token_logprobs(logits, 1, 20).top.size(), 2u);
  EXPECT_TRUE(compute_token_logprobs(logits, 1, 0).top.empty());
}

}  // namespace
}  // namespace crosspoint
