#include <map>

#include "kernels/sampling.h"
#include "kernels/softmax.h"
#include "kernel_test_util.h"

namespace crosspoint {
namespace {

using testing::random_floats;

TEST(SamplingTest, FastMatchesReferenceForManyDraws) {
  const std::vector<SamplingParams> settings = {{1.0f, 0, 1.0f},       {0.7f, 0, 1.0f},         {1.0f, 5, 1.0f},
                                                {0.8f, 0, 0.9f},       {1.3f, 40, 0.5f},        {0.5f, 1, 1.0f},
                                                {1.0f, 0, 0.05f},      {2.0f, 1000, 0.99f},     {1.0f, 0, 1.0f, 0.05f},
                                                {0.6f, 0, 0.9f, 0.2f}, {1.5f, 30, 0.8f, 0.01f}, {1.0f, 0, 1.0f, 1.0f}};
  SamplingRng rng(1234);
  for (int64_t vocab : {1, 2, 7, 300, 5003}) {
    const auto logits = random_floats(vocab, static_cast<uint32_t>(vocab), -6.0f, 6.0f);
    for (const auto& params : settings) {
      for (int draw = 0; draw < 20; ++draw) {
        const float u = rng.next_uniform();
        EXPECT_EQ(sample_token(logits.data(), vocab, params, u), sample_token_ref(logits.data(), vocab, params, u))
            << "vocab " << vocab << " T " << params.temperature << " k " << params.top_k << " p " << params.top_p
            << " min_p " << params.min_p;
      }
    }
  }
}

TEST(SamplingTest, GreedyIsArgmaxWithLowestIdOnTies) {
  const float logits[] = {0.5f, 3.0f, -1.0f, 3.0f};
  EXPECT_EQ(sample_token(logits, 4, {0.0f, 0, 1.0f}, 0.99f), 1);
  EXPECT_EQ(argmax(logits, 4), 1);
}

TEST(SamplingTest, FrequenciesFollowTheFilteredDistribution) {
  // logits log(1..5): probs 1/15..5/15; top_k 3 keeps ids 4,3,2 with 5/12, 4/12, 3/12.
  std::vector<float> logits;
  for (int i = 1; i <= 5; ++i) logits.push_back(std::log(static_cast<float>(i)));
  SamplingRng rng(7);
  std::map<int32_t, int> counts;
  const int n = 60000;
  for (int i = 0; i < n; ++i) ++counts[sample_token(logits.data(), 5, {1.0f, 3, 1.0f}, rng.next_uniform())];
  EXPECT_EQ(counts.count(0) + counts.count(1), 0u);
  EXPECT_NEAR(counts[4] / double(n), 5.0 / 12, 0.01);
  EXPECT_NEAR(counts[3] / double(n), 4.0 / 12, 0.01);
  EXPECT_NEAR(counts[2] / double(n), 3.0 / 12, 0.01);
  // top_p 0.55 of 5/15, 4/15, 3/15...: cumulative 0.33, 0.6 -> keeps ids 4 and 3.
  counts.clear();
  for (int i = 0; i < n; ++i) ++counts[sample_token(logits.data(), 5, {1.0f, 0, 0.55f}, rng.next_uniform())];
  EXPECT_EQ(counts.size(), 2u);
  EXPECT_NEAR(counts[4] / double(n), 5.0 / 9, 0.01);
}

TEST(SamplingTest, RngIsSeededAndUniform) {
  SamplingRng a(42), b(42), c(43);
  bool differs = false;
  double sum = 0.0;
  for (int i = 0; i < 10000; ++i) {
    const float u = a.next_uniform();
    EXPECT_EQ(u, b.next_uniform());
    differs |= (u != c.next_uniform());
    EXPECT_GE(u, 0.0f);
    EXPECT_LT(u, 1.0f);
    sum += u;
  }
  EXPECT_TRUE(differs);
  EXPECT_NEAR(sum / 10000, 0.5, 0.02);
}

TEST(SamplingTest, ValidatesParams) {
  EXPECT_TRUE(validate_sampling_params({0.0f, 0, 1.0f}).is_ok());
  EXPECT_FALSE(validate_sampling_params({-1.0f, 0, 1.0f}).is_ok());
  EXPECT_FALSE(validate_sampling_params({1.0f, 0, 0.0f}).is_ok());
  EXPECT_FALSE(validate_sampling_params({1.0f, -2, 1.0f}).is_ok());
  EXPECT_FALSE(validate_sampling_params({NAN, 0, 1.0f}).is_ok());
}

}  // namespace
}  // namespace crosspoint
