// scale_rope_yarn against transformers' _compute_yarn_parameters (yarn_inv_freq.json, made by
// tests/fixtures/model/make_yarn_inv_freq.py): Qwen2.5-7B's setting, the tiny checkpoint's and
// one with every optional field.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "kernels/rope.h"

namespace crosspoint {
namespace {

TEST(RopeYarn, FrequenciesAndAttentionFactorMatchTransformers) {
  std::ifstream file(std::string(CROSSPOINT_SOURCE_DIR) + "/tests/fixtures/model/yarn_inv_freq.json");
  ASSERT_TRUE(file.good());
  std::stringstream text;
  text << file.rdbuf();
  const nlohmann::json fixture = nlohmann::json::parse(text.str());
  ASSERT_EQ(fixture["cases"].size(), 3u);
  for (const auto& c : fixture["cases"]) {
    SCOPED_TRACE(c["name"].get<std::string>());
    YarnParameters y;
    y.factor = c["factor"].get<double>();
    y.original_max_position = c["original_max_position"].get<double>();
    y.beta_fast = c["beta_fast"].get<double>();
    y.beta_slow = c["beta_slow"].get<double>();
    y.truncate = c["truncate"].get<bool>();
    y.mscale = c["mscale"].get<double>();
    y.mscale_all_dim = c["mscale_all_dim"].get<double>();
    const int64_t head_dim = c["head_dim"].get<int64_t>();
    const double theta = c["theta"].get<double>();
    std::vector<float> inv_freq = rope_inv_freq(head_dim, theta);
    const std::vector<float> unscaled = inv_freq;
    const float attention_factor = scale_rope_yarn(inv_freq, head_dim, theta, y);
    EXPECT_FLOAT_EQ(attention_factor, static_cast<float>(c["attention_factor"].get<double>()));
    const auto& want = c["inv_freq"];
    ASSERT_EQ(want.size(), inv_freq.size());
    int num_changed = 0;
    for (size_t i = 0; i < inv_freq.size(); ++i) {
      const float expected = want[i].get<float>();
      // fp32 throughout, as transformers; a few ulp for powf against torch's pow.
      EXPECT_NEAR(inv_freq[i], expected, 4e-7f * expected) << "i=" << i;
      num_changed += inv_freq[i] != unscaled[i] ? 1 : 0;
    }
    EXPECT_GT(num_changed, 0);  // the scaling does something in every case
  }
}

TEST(RopeYarn, AttentionScalingMultipliesCosAndSin) {
  // head_dim 2, angle = position: (1, 0) rotated by 2 and scaled by 1.5.
  float x[] = {1.0f, 0.0f}, x_ref[] = {1.0f, 0.0f};
  const int32_t position = 2;
  const std::vector<float> inv_freq = rope_inv_freq(2, 10000.0);
  ASSERT_TRUE(rope({x, 0, 1, 1, 2, &position, inv_freq.data(), 1.5f}).is_ok());
  ASSERT_TRUE(rope_ref({x_ref, 0, 1, 1, 2, &position, inv_freq.data(), 1.5f}).is_ok());
  EXPECT_NEAR(x[0], 1.5 * std::cos(2.0), 1e-6);
  EXPECT_NEAR(x[1], 1.5 * std::sin(2.0), 1e-6);
  EXPECT_EQ(x[0], x_ref[0]);
  EXPECT_EQ(x[1], x_ref[1]);
}

}  // namespace
}  // namespace crosspoint
