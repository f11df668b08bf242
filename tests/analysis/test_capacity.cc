// Capacity planner against the study's capacity section and numpy's percentile.
#include <gtest/gtest.h>

#include "analysis/capacity.h"
#include "study_fixture.h"

namespace crosspoint::analysis {
namespace {

TEST(Percentile, MatchesNumpyLinear) {
  // numpy.percentile([1, 2, 3, 4], 90) = 3.7; ([15, 20, 35, 40, 50], 40) = 29.0
  EXPECT_DOUBLE_EQ(percentile_linear({4, 1, 3, 2}, 90), 3.7);
  EXPECT_DOUBLE_EQ(percentile_linear({15, 20, 35, 40, 50}, 40), 29.0);
  EXPECT_DOUBLE_EQ(percentile_linear({7}, 99), 7);
  EXPECT_DOUBLE_EQ(percentile_linear({}, 50), 0);
  EXPECT_DOUBLE_EQ(percentile_linear({1, 2}, 100), 2);
}

TEST(StudyCapacity, WorstCaseUnderestimatesNineFold) {
  const StudyResults study = testing::load_study_or_die();
  const PrecisionSetup* fp16 = study.find_precision("fp16");
  ASSERT_NE(fp16, nullptr);
  CapacityInput input;
  input.kv_cache_tokens = fp16->kv_cache_tokens;
  input.max_model_len = study.max_model_len;
  input.mean_request_tokens = study.mean_input_tokens + study.mean_output_tokens;
  input.observed_mean_running_batch = 62.8;
  input.num_preemptions = 0;
  input.concurrency_cap = 100;
  const CapacityPlan plan = plan_capacity(input);
  EXPECT_NEAR(plan.worst_case_concurrency, 24.97, 0.005);  // vLLM's "24.97x"
  EXPECT_NEAR(plan.workload_concurrency, 233.5, 0.1);      // "102,288 / 438 ~ 233"
  EXPECT_NEAR(plan.workload_concurrency / plan.worst_case_concurrency, 9.35, 0.01);
  EXPECT_NE(plan.verdict.find("underestimates"), std::string::npos) << plan.verdict;
  EXPECT_NE(plan.verdict.find("no preemption"), std::string::npos) << plan.verdict;
}

TEST(Capacity, PercentilesAndBlocksFromTheDistribution) {
  CapacityInput input;
  input.kv_cache_tokens = 16000;
  input.max_model_len = 4000;
  input.block_size = 16;
  input.request_tokens = {10, 20, 100, 1000};  // rounded to 16, 32, 112, 1008 tokens
  input.percentiles = {50, 100};
  const CapacityPlan plan = plan_capacity(input);
  EXPECT_DOUBLE_EQ(plan.worst_case_concurrency, 4);
  EXPECT_DOUBLE_EQ(plan.mean_request_tokens, (16 + 32 + 112 + 1008) / 4.0);
  EXPECT_DOUBLE_EQ(plan.workload_concurrency, 16000 / 292.0);
  ASSERT_EQ(plan.percentile_concurrency.size(), 2u);
  EXPECT_DOUBLE_EQ(plan.percentile_concurrency[0].request_tokens, 80);  // p50 of the rounded = 72 -> 80
  EXPECT_DOUBLE_EQ(plan.percentile_concurrency[1].request_tokens, 1008);
  EXPECT_DOUBLE_EQ(plan.percentile_concurrency[1].concurrency, 16000 / 1008.0);
  EXPECT_NE(plan.verdict.find("no run"), std::string::npos);
}

TEST(Capacity, PreemptionsMeanKvWasTheLimit) {
  CapacityInput input;
  input.kv_cache_tokens = 1000;
  input.max_model_len = 500;
  input.mean_request_tokens = 100;
  input.observed_peak_running_batch = 9;
  input.num_preemptions = 12;
  const CapacityPlan plan = plan_capacity(input);
  EXPECT_NE(plan.verdict.find("12 preemptions"), std::string::npos) << plan.verdict;
}

}  // namespace
}  // namespace crosspoint::analysis
