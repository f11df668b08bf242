// The report's explanation of each crossover, on the original study and on synthetic cells
// where the KV cache binds one precision.
#include <gtest/gtest.h>

#include "analysis/crossover_explanation.h"
#include "analysis/model_shape.h"
#include "analysis/study_report.h"
#include "study_fixture.h"

namespace crosspoint::analysis {
namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

const CrossoverExplanation* find_explanation(const std::vector<CrossoverExplanation>& all, Metric metric) {
  for (const CrossoverExplanation& e : all) {
    if (e.crossover.metric == metric) return &e;
  }
  return nullptr;
}

TEST(CrossoverExplanation, TheStudysTpotCrossoverIsTimeTheRooflineDoesNotAccountFor) {
  const StudyResults study = testing::load_study_or_die();
  AnalysisOptions options;
  options.hardware = find_datasheet("L4").value();
  auto analysis = analyze_study(study, options);
  ASSERT_TRUE(analysis.is_ok()) << analysis.status().to_string();
  const std::vector<CrossoverExplanation> all = explain_crossovers(*analysis);
  const CrossoverExplanation* median = find_explanation(all, Metric::kMedianTpot);
  ASSERT_NE(median, nullptr);
  EXPECT_EQ(median->where, "median TPOT: w4a16 leads up to concurrency 10, w8a8-fp8 from 100");
  ASSERT_GE(median->reasons.size(), 3u);
  // At 10 both are memory-bound and W4A16 reads fewer bytes; at 100 its bound is still the
  // lower one (18.9 against 29.3 ms), so FP8's win is the time outside the roofline.
  EXPECT_TRUE(contains(median->reasons[0], "At concurrency 10")) << median->reasons[0];
  EXPECT_TRUE(contains(median->reasons[0], "The roofline predicts w4a16 ahead: fewer bytes to read."))
      << median->reasons[0];
  EXPECT_TRUE(contains(median->reasons[1], "At concurrency 100")) << median->reasons[1];
  EXPECT_TRUE(contains(median->reasons[1], "The roofline alone ranks w4a16 first")) << median->reasons[1];
  EXPECT_TRUE(contains(median->reasons.back(), "did not bind")) << median->reasons.back();
  EXPECT_TRUE(contains(median->reasons.back(), "not sampled")) << median->reasons.back();
  // The report carries the section.
  const ReportFiles report = render_study_report(study, *analysis);
  EXPECT_TRUE(contains(report.markdown, "## Why the crossovers happen"));
  EXPECT_TRUE(contains(report.markdown, median->where));
}

CellMeasurement cell(const std::string& precision, double concurrency, double tpot_ms, double throughput, double batch,
                     double context, double kv_usage, int64_t preemptions) {
  CellMeasurement c;
  c.precision = precision;
  c.concurrency = concurrency;
  c.median_tpot_ms = tpot_ms;
  c.p99_tpot_ms = tpot_ms * 2;
  c.output_throughput_tok_s = throughput;
  c.mean_running_batch = batch;
  if (context > 0) c.mean_context_tokens = context;
  c.max_kv_cache_usage = kv_usage;
  c.num_preemptions = preemptions;
  return c;
}

TEST(CrossoverExplanation, ThroughputLeadFromTheBatchWhenTheKvCacheBindsTheOther) {
  StudyResults study;
  study.model_num_params = 7.6e9;
  study.precisions = {{"fp16", Precision::kFp16, 15.2e9, 100000, 0, 0},
                      {"w4a16", Precision::kW4A16, 5.6e9, 270000, 0, 0}};
  // At 10 fp16 makes more tokens; at 100 the KV cache holds fp16 to a batch of 50 while
  // w4a16 runs 90, and w4a16's slower step does not make up for the batch.
  study.cells = {cell("fp16", 10, 9, 1100, 10, 400, 0.05, 0), cell("w4a16", 10, 10, 1000, 10, 400, 0.02, 0),
                 cell("fp16", 100, 12, 4100, 50, 0, 0.99, 14), cell("w4a16", 100, 16, 5600, 90, 0, 0.40, 0)};
  // No context recorded at 100: the mean usage of the KV cache gives it (0.45 x 100,000 / 50
  // and 0.30 x 270,000 / 90 = 900 tokens).
  study.cells[2].mean_kv_cache_usage = 0.45;
  study.cells[3].mean_kv_cache_usage = 0.30;
  AnalysisOptions options;
  options.hardware = find_datasheet("L4").value();
  auto shape = load_model_shape(std::string(CROSSPOINT_FIXTURES_DIR) + "/analysis/qwen2_5_7b_config.json");
  ASSERT_TRUE(shape.is_ok()) << shape.status().to_string();
  options.model_shape = *shape;
  auto analysis = analyze_study(study, options);
  ASSERT_TRUE(analysis.is_ok()) << analysis.status().to_string();
  const std::vector<CrossoverExplanation> all = explain_crossovers(*analysis);
  const CrossoverExplanation* throughput = find_explanation(all, Metric::kOutputThroughput);
  ASSERT_NE(throughput, nullptr);
  EXPECT_EQ(throughput->where, "output throughput: fp16 leads up to concurrency 10, w4a16 from 100");
  ASSERT_GE(throughput->reasons.size(), 3u);
  EXPECT_TRUE(contains(throughput->reasons[1], "w4a16 made 5600 tok/s with a mean batch of 90.0"))
      << throughput->reasons[1];
  EXPECT_TRUE(contains(throughput->reasons[1], "the larger batch decides (its steps are slower)."))
      << throughput->reasons[1];
  EXPECT_TRUE(contains(throughput->reasons.back(),
                       "bound fp16's batch (peak usage 99 %, 14 preemptions), not "
                       "w4a16's (peak usage 40 %)"))
      << throughput->reasons.back();
  // The KV reads (90 sequences x 900 tokens) are counted in attention's share.
  bool attention = false;
  for (const std::string& r : throughput->reasons) {
    if (!contains(r, "Attention's share at concurrency 100")) continue;
    attention = true;
    EXPECT_TRUE(contains(r, "(900 and 900 tokens of context per sequence, estimated from the KV cache's usage)")) << r;
  }
  EXPECT_TRUE(attention);
}

TEST(CrossoverExplanation, AnFp8KvSetupCountsOneBytePerCachedElement) {
  // The same cell served with the study's f32 cache and with an fp8 one (a sweep's +kv-fp8
  // label): the roofline's KV bytes are a quarter.
  StudyResults study;
  study.precisions = {{"fp16", Precision::kFp16, 15.2e9, 100000, 0, 0, 0},
                      {"fp16+kv-fp8", Precision::kFp16, 15.2e9, 400000, 0, 0, 1}};
  study.cells = {cell("fp16", 10, 9, 1100, 10, 400, 0.05, 0), cell("fp16+kv-fp8", 10, 9, 1100, 10, 400, 0.05, 0)};
  AnalysisOptions options;
  options.hardware = find_datasheet("L4").value();
  options.kv_bytes_per_element = 4;
  auto shape = load_model_shape(std::string(CROSSPOINT_FIXTURES_DIR) + "/analysis/qwen2_5_7b_config.json");
  ASSERT_TRUE(shape.is_ok());
  options.model_shape = *shape;
  auto analysis = analyze_study(study, options);
  ASSERT_TRUE(analysis.is_ok()) << analysis.status().to_string();
  ASSERT_EQ(analysis->roofline.size(), 2u);
  EXPECT_GT(analysis->roofline[0].kv_bytes_per_step, 0);
  EXPECT_DOUBLE_EQ(analysis->roofline[1].kv_bytes_per_step, analysis->roofline[0].kv_bytes_per_step / 4);
}

TEST(CrossoverExplanation, NoCrossoverNoExplanation) {
  StudyResults study;
  study.model_num_params = 7.6e9;
  study.precisions = {{"fp16", Precision::kFp16, 15.2e9, 100000, 0, 0},
                      {"w4a16", Precision::kW4A16, 5.6e9, 270000, 0, 0}};
  study.cells = {cell("fp16", 1, 50, 20, 1, 300, 0.01, 0), cell("w4a16", 1, 25, 40, 1, 300, 0.01, 0),
                 cell("fp16", 10, 55, 180, 10, 300, 0.02, 0), cell("w4a16", 10, 28, 350, 10, 300, 0.01, 0)};
  AnalysisOptions options;
  options.hardware = find_datasheet("L4").value();
  auto analysis = analyze_study(study, options);
  ASSERT_TRUE(analysis.is_ok()) << analysis.status().to_string();
  EXPECT_TRUE(explain_crossovers(*analysis).empty());
}

}  // namespace
}  // namespace crosspoint::analysis
