// eval's per-position metrics against values computed by hand (softmax in closed form), and
// the totals over a tiny checkpoint against itself and against a quantised copy.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "model/model.h"
#include "model/model_test_util.h"
#include "quant/eval_metrics.h"
#include "quant/gptq_linear_weight.h"
#include "quant/quantize_model.h"

namespace crosspoint {
namespace {

TEST(EvalMetricsTest, NllAndKlDivergenceOfTwoTokenRows) {
  // p = softmax(0, 0) = (1/2, 1/2); q = softmax(ln 3, 0) = (3/4, 1/4).
  const float p[2] = {0.0f, 0.0f};
  const float q[2] = {std::log(3.0f), 0.0f};
  EXPECT_NEAR(token_nll(q, 2, 1), std::log(4.0), 1e-6);
  const double kl = 0.5 * std::log(0.5 / 0.75) + 0.5 * std::log(0.5 / 0.25);  // 0.14384
  EXPECT_NEAR(kl_divergence(p, q, 2), kl, 1e-6);
  EXPECT_EQ(kl_divergence(q, q, 2), 0.0);
  // Large logits do not overflow: the same distributions shifted by 1e4.
  const float p_shift[2] = {1e4f, 1e4f};
  EXPECT_NEAR(kl_divergence(p_shift, q, 2), kl, 1e-6);
}

TEST(EvalMetricsTest, KlQuantilesAreNearestRank) {
  EvalTotals t;
  EXPECT_TRUE(std::isnan(t.mean_kl_divergence()));
  for (int i = 1; i <= 100; ++i) t.kl_divergence.push_back(i);
  EXPECT_DOUBLE_EQ(t.mean_kl_divergence(), 50.5);
  EXPECT_DOUBLE_EQ(t.kl_divergence_quantile(0.99), 99.0);
  EXPECT_DOUBLE_EQ(t.kl_divergence_quantile(1.0), 100.0);
  EXPECT_DOUBLE_EQ(t.kl_divergence_quantile(0.0), 1.0);
}

TEST(EvalMetricsTest, AModelAgainstItselfHasZeroDivergenceAndAQuantisedCopySome) {
  const std::string dense_dir = testing::model_fixture_dir("qwen2_untied_bf16");
  auto dense = Model::load(dense_dir);
  ASSERT_TRUE(dense.is_ok()) << dense.status().to_string();
  const std::vector<int32_t> tokens = testing::load_reference("qwen2_untied_bf16").token_ids;
  EvalTotals self;
  ASSERT_TRUE(evaluate_sequence(**dense, dense->get(), tokens, self).is_ok());
  EXPECT_EQ(self.kl_divergence.size(), tokens.size() - 1);
  EXPECT_EQ(self.kl_divergence_quantile(1.0), 0.0);
  EXPECT_EQ(self.agreement(), 1.0);

  const auto out = std::filesystem::temp_directory_path() / ("crosspoint_eval_kl_" + std::to_string(::getpid()));
  QuantizeModelOptions quantize;
  quantize.model_dir = dense_dir;
  quantize.out_dir = out.string();
  quantize.scheme = QuantizeScheme::kW8A8Int8;
  quantize.overwrite = true;
  ASSERT_TRUE(quantize_model(quantize).is_ok());
  ModelLoadOptions options;
  options.linear_formats = quantized_linear_weight_formats();
  auto int8 = Model::load(out.string(), options);
  ASSERT_TRUE(int8.is_ok()) << int8.status().to_string();
  EvalTotals against;
  ASSERT_TRUE(evaluate_sequence(**int8, dense->get(), tokens, against).is_ok());
  EXPECT_GT(against.mean_kl_divergence(), 0.0);
  EXPECT_LT(against.mean_kl_divergence(), 0.1);  // int8 of a random tiny model: close, not equal
  EXPECT_GE(against.kl_divergence_quantile(1.0), against.kl_divergence_quantile(0.99));
  std::filesystem::remove_all(out);
}

}  // namespace
}  // namespace crosspoint
