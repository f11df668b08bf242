// lm-evaluation-harness results as the sweep reads them (--harness-results): the scores of a
// results file, the PRECISION=FILE option, and the report's table with its differences from fp16.
#include <gtest/gtest.h>

#include "analysis/markdown_table.h"
#include "sweep/harness_quality.h"

namespace crosspoint::sweep {
namespace {

// The shape lm-eval 0.4 writes (scripts/eval/lm_eval_served.sh keeps it under "results").
nlohmann::json results_file(double acc, double exact_match) {
  return nlohmann::json::parse(R"({"results": {
    "crosspoint_mc": {"name": "crosspoint_mc", "alias": "crosspoint_mc", "sample_len": 32,
                      "acc,none": )" +
                               std::to_string(acc) + R"(, "acc_stderr,none": 0.08,
                      "acc_norm,none": 0.59375, "acc_norm_stderr,none": 0.088},
    "crosspoint_gen": {"alias": "crosspoint_gen", "exact_match,strict-match": )" +
                               std::to_string(exact_match) + R"(,
                       "exact_match_stderr,strict-match": "N/A"}}})");
}

TEST(HarnessQuality, ReadsEachTaskMetricWithItsStandardError) {
  auto scores = harness_scores_from_json(results_file(0.71875, 0.75), "fp16.json");
  ASSERT_TRUE(scores.is_ok()) << scores.status().to_string();
  ASSERT_EQ(scores->size(), 3u);
  EXPECT_EQ((*scores)[0].task, "crosspoint_gen");
  EXPECT_EQ((*scores)[0].metric, "exact_match,strict-match");
  EXPECT_DOUBLE_EQ((*scores)[0].value, 0.75);
  EXPECT_FALSE((*scores)[0].stderr_value.has_value());  // "N/A" in the file
  EXPECT_EQ((*scores)[1].metric, "acc");
  EXPECT_DOUBLE_EQ((*scores)[1].value, 0.71875);
  ASSERT_TRUE((*scores)[1].stderr_value.has_value());
  EXPECT_DOUBLE_EQ(*(*scores)[1].stderr_value, 0.08);
  EXPECT_EQ((*scores)[2].metric, "acc_norm");
}

TEST(HarnessQuality, RefusesFilesWithoutScores) {
  EXPECT_FALSE(harness_scores_from_json(nlohmann::json::array(), "x").is_ok());
  EXPECT_FALSE(harness_scores_from_json({{"results", {{"task", {{"alias", "task"}}}}}}, "x").is_ok());
  auto missing = harness_scores_from_json({{"configs", {}}}, "w4a16.json");
  ASSERT_FALSE(missing.is_ok());
  EXPECT_NE(missing.status().message().find("w4a16.json"), std::string::npos);
}

TEST(HarnessQuality, ParsesPrecisionEqualsFile) {
  std::vector<std::pair<std::string, std::string>> out;
  const std::vector<std::string> precisions = {"fp16", "w4a16"};
  EXPECT_TRUE(parse_harness_results("w4a16=/tmp/r.json", precisions, out).is_ok());
  EXPECT_EQ(out.back(), (std::pair<std::string, std::string>{"w4a16", "/tmp/r.json"}));
  EXPECT_FALSE(parse_harness_results("w4a16=/tmp/other.json", precisions, out).is_ok());  // twice
  EXPECT_FALSE(parse_harness_results("w8a8-fp8=/tmp/r.json", precisions, out).is_ok());   // not swept
  EXPECT_FALSE(parse_harness_results("fp16", precisions, out).is_ok());
  EXPECT_FALSE(parse_harness_results("=x", precisions, out).is_ok());
}

TEST(HarnessQuality, TableShowsEachPrecisionAndItsDifferenceFromFp16) {
  const auto fp16 = harness_scores_from_json(results_file(0.75, 0.75), "a").value();
  const auto w4a16 = harness_scores_from_json(results_file(0.6875, 0.5), "b").value();
  const std::string table = analysis::render_markdown_table(harness_quality_table({{"fp16", fp16}, {"w4a16", w4a16}}));
  EXPECT_NE(table.find("| task | metric | fp16 | w4a16 | Δ w4a16 |"), std::string::npos) << table;
  EXPECT_NE(table.find("0.7500 ± 0.0800"), std::string::npos) << table;
  EXPECT_NE(table.find("-6.2 pt"), std::string::npos) << table;   // acc 0.6875 - 0.75
  EXPECT_NE(table.find("-25.0 pt"), std::string::npos) << table;  // exact_match 0.5 - 0.75
  // Without fp16 there is nothing to subtract from.
  const std::string alone = analysis::render_markdown_table(harness_quality_table({{"w4a16", w4a16}}));
  EXPECT_EQ(alone.find("Δ"), std::string::npos) << alone;
}

}  // namespace
}  // namespace crosspoint::sweep
