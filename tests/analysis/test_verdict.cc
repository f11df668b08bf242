// The first screen's verdict: the headline compared across weight precisions, the SLO capacity,
// and the sentences, on the seed study, the H200 KV-cache grid of 2026-12-03 and synthetic cells.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/hardware_table.h"
#include "analysis/study_analysis.h"
#include "analysis/first_screen.h"
#include "analysis/verdict.h"
#include "kv_grid_fixture.h"
#include "study_fixture.h"

namespace crosspoint::analysis {
namespace {

std::string answer_to(const std::vector<VerdictLine>& verdict, const std::string& question_start) {
  for (const VerdictLine& line : verdict) {
    if (line.question.rfind(question_start, 0) == 0) return line.answer;
  }
  ADD_FAILURE() << "no verdict line " << question_start;
  return "";
}

StudyAnalysis analyze_or_die(const StudyResults& study, std::optional<ServiceLevelObjective> slo = std::nullopt) {
  AnalysisOptions options;
  options.hardware = find_datasheet("H200").value();
  options.model_num_params = 7.6e9;
  options.slo = slo;
  auto analysis = analyze_study(study, options);
  EXPECT_TRUE(analysis.is_ok()) << analysis.status().to_string();
  return analysis.is_ok() ? analysis.value() : StudyAnalysis{};
}

CellMeasurement cell(const std::string& label, double concurrency, double median_tpot_ms, double throughput) {
  CellMeasurement c;
  c.precision = label;
  c.concurrency = concurrency;
  c.num_completed = 8;
  c.duration_s = 4;
  c.median_tpot_ms = median_tpot_ms;
  c.output_throughput_tok_s = throughput;
  return c;
}

TEST(Verdict, SeedStudyNamesItsCrossoverAndItsSloCapacity) {
  const StudyResults study = testing::load_study_or_die();
  AnalysisOptions options;
  options.hardware = find_datasheet("L4").value();
  auto analysis = analyze_study(study, options);
  ASSERT_TRUE(analysis.is_ok()) << analysis.status().to_string();
  const std::vector<VerdictLine> verdict = build_verdict(analysis.value(), {});
  // STUDY.md: W4A16 30.04 vs W8A8 37.27 ms at 10 (24 %), 28.8 vs 36.2 at 1; W8A8 66.52 vs 75.05 at 100.
  EXPECT_EQ(answer_to(verdict, "Lowest latency"), "w4a16 at 1, 10 (by 24–26 %); w8a8-fp8 at 100 (by 13 %)");
  EXPECT_EQ(answer_to(verdict, "Where the answer changes"), "median TPOT: w4a16 → w8a8-fp8 between 10 and 100");
  // p99 TTFT 243 / 238 ms at 1, 3305 / 2441 / 3641 ms at 100: within 1 s only at 1.
  EXPECT_EQ(answer_to(verdict, "Load within the SLO (p99 TTFT ≤ 1000 ms, the default)"),
            "fp16, w4a16 up to 1 (misses at 100; no data at 10); w8a8-fp8 at no level (misses at 100; no data at 1, "
            "10)");
  EXPECT_EQ(answer_to(verdict, "Quality cost"), "not measured in this study");
  EXPECT_EQ(answer_to(verdict, "How sure").rfind("decided at 5 of 5 compared levels by a margin over 2 % alone", 0),
            0u);
}

TEST(Verdict, KvGridComparesWeightPrecisionsNotTwins) {
  const StudyResults study = testing::kv_grid_study();
  const StudyAnalysis analysis = analyze_or_die(study);
  // Label against label, the two best at 1 are W4A16 with either KV cache (2.17 and 2.18 ms): a
  // tie, which the 2026-12-03 report's headline repeated as "median TPOT: tie at 1".
  const auto labels = winners_by_concurrency(analysis.cells, Metric::kMedianTpot, 0.02);
  ASSERT_EQ(labels.size(), 3u);
  EXPECT_TRUE(labels[0].tie);
  // Across weight precisions W4A16 leads at 1 (2.17 vs W8A8-FP8's 3.05 ms), W8A8-FP8 at 64
  // (6.36 vs fp16's 7.07), fp16 at 512 (21.32 vs 24.19): two crossovers.
  const std::vector<VerdictLine> verdict = build_verdict(analysis, {});
  EXPECT_EQ(answer_to(verdict, "Lowest latency"),
            "w4a16 at 1 (by 40 %); w8a8-fp8 at 64 (by 11 %); fp16 at 512 (by 13 %)");
  EXPECT_NE(answer_to(verdict, "Where the answer changes")
                .find("median TPOT: w4a16 → w8a8-fp8 between 1 and 64, w8a8-fp8 → fp16 between 64 and 512;"),
            std::string::npos)
      << answer_to(verdict, "Where the answer changes");
  // Every way of serving meets p99 TTFT ≤ 1 s at 64 (246-454 ms) and misses it at 512 (2.5-4.7 s).
  EXPECT_EQ(answer_to(verdict, "Load within the SLO"), "all 6 up to 64 (misses at 512)");
  // Throughput at 512: W8A8-FP8 14,035 tok/s ahead of fp16+kv-fp8's 11,117 (2,918 / 14,035 = 21 %).
  EXPECT_NE(answer_to(verdict, "Most throughput").find("w8a8-fp8 at 512 (by 21 %)"), std::string::npos)
      << answer_to(verdict, "Most throughput");
}

TEST(Verdict, TwinsTieButTheWeightPrecisionLeads) {
  StudyResults study;
  for (const char* label : {"fp16", "w4a16", "w4a16+kv-fp8"}) {
    PrecisionSetup setup;
    setup.label = label;
    setup.precision = std::string(label) == "fp16" ? Precision::kFp16 : Precision::kW4A16;
    study.precisions.push_back(setup);
  }
  study.cells = {cell("fp16", 1, 15, 60),  cell("w4a16", 1, 10, 90),    cell("w4a16+kv-fp8", 1, 10.05, 89.5),
                 cell("fp16", 8, 20, 400), cell("w4a16", 8, 20.1, 398), cell("w4a16+kv-fp8", 8, 22, 360)};
  const StudyAnalysis analysis = analyze_or_die(study);
  const std::vector<VerdictLine> verdict = build_verdict(analysis, {{"w4a16", 3.25, 0.91}});
  // At 1 w4a16 is 50 % faster than fp16 (15 vs 10 ms); at 8 fp16 and w4a16 are within 2 %.
  EXPECT_EQ(answer_to(verdict, "Lowest latency"), "w4a16 at 1 (by 50 %); tie at 8");
  EXPECT_EQ(answer_to(verdict, "Where the answer changes"), "no crossover in 1–8");
  EXPECT_EQ(answer_to(verdict, "Quality cost"), "w4a16 +3.25 % perplexity (91 % greedy agreement)");
  // Throughput: w4a16 90 vs 60 tok/s at 1, fp16 400 vs 398 at 8 (a tie).
  EXPECT_EQ(answer_to(verdict, "How sure"),
            "decided at 2 of 4 compared levels by a margin over 2 % alone (no per-request data, so no intervals); tie "
            "within 2 %: median TPOT at 8; output throughput at 8");
  // One weight precision served two ways: the ways are compared (1: 10 vs 10.05 ms, a tie).
  StudyResults one_weight = study;
  one_weight.cells.erase(std::remove_if(one_weight.cells.begin(), one_weight.cells.end(),
                                        [](const CellMeasurement& c) { return c.precision == "fp16"; }),
                         one_weight.cells.end());
  EXPECT_EQ(answer_to(build_verdict(analyze_or_die(one_weight), {}), "Lowest latency"),
            "w4a16 at 8 (by 9.5 %); tie at 1");
  // Without axis twins the headline equals the label-against-label winners.
  StudyResults plain = study;
  plain.cells.erase(std::remove_if(plain.cells.begin(), plain.cells.end(),
                                   [](const CellMeasurement& c) { return c.precision == "w4a16+kv-fp8"; }),
                    plain.cells.end());
  const StudyAnalysis plain_analysis = analyze_or_die(plain);
  const HeadlineMetric headline = headline_metric(plain, plain_analysis.cells, Metric::kMedianTpot, 0.02);
  const auto labels = winners_by_concurrency(plain_analysis.cells, Metric::kMedianTpot, 0.02);
  ASSERT_EQ(headline.winners.size(), labels.size());
  for (size_t i = 0; i < labels.size(); ++i) {
    EXPECT_EQ(headline.winners[i].winner, labels[i].winner);
    EXPECT_EQ(headline.winners[i].tie, labels[i].tie);
  }
}

// Four requests per cell with the given TTFTs (ms), each 1 s long with 11 tokens.
CellMeasurement cell_with_requests(const std::string& label, double concurrency, std::vector<double> ttfts_ms) {
  CellMeasurement c = cell(label, concurrency, 90, 40);
  c.duration_s = 2;
  for (double ttft : ttfts_ms) {
    c.request_ttft_ms.push_back(ttft);
    c.request_e2el_ms.push_back(1000 + ttft);
    c.request_output_tokens.push_back(11);
    c.request_tpot_ms.push_back(100);
  }
  c.num_completed = static_cast<int64_t>(ttfts_ms.size());
  return c;
}

TEST(Verdict, SloCapacityAndGoodputFromTheRequests) {
  StudyResults study;
  study.cells = {
      cell_with_requests("fp16", 1, {100, 200, 300, 400}), cell_with_requests("fp16", 4, {500, 900, 1500, 2000}),
      cell_with_requests("w4a16", 1, {50, 60, 70, 80}), cell_with_requests("w4a16", 4, {100, 200, 300, 900})};
  const StudyAnalysis analysis = analyze_or_die(study);
  ASSERT_EQ(analysis.slo.capacity.size(), 2u);
  // Default SLO p99 TTFT ≤ 1 s: fp16's p99 at 4 is 1985 ms (linear between 1500 and 2000); its
  // two good requests of four in 2 s are 1 req/s, all four at 1 are 2 req/s.
  EXPECT_EQ(answer_to(build_verdict(analysis, {}), "Load within the SLO"),
            "fp16 up to 1 (goodput 2 req/s; misses at 4); w4a16 up to 4 (goodput 2 req/s)");
  double fp16_goodput_at_4 = -1;
  for (const CellMeasurement& c : analysis.cells) {
    if (c.precision == "fp16" && c.concurrency == 4) fp16_goodput_at_4 = c.request_goodput_req_s.value_or(-1);
  }
  EXPECT_DOUBLE_EQ(fp16_goodput_at_4, 1.0);
  // The most goodput changes hands where fp16 misses: tied at 1, w4a16 ahead at 4.
  EXPECT_EQ(analysis.slo.most_load, std::vector<std::string>{"w4a16"});
  // A TPOT limit too: 100 ms per token; 99 ms lets no request through, so nothing meets it.
  ServiceLevelObjective strict;
  strict.tpot_ms = 99;
  const StudyAnalysis strict_analysis = analyze_or_die(study, strict);
  EXPECT_EQ(answer_to(build_verdict(strict_analysis, {}), "Load within the SLO (p99 TPOT ≤ 99 ms)"),
            "fp16, w4a16 at no level (misses at 1)");
}

TEST(Verdict, CpuRateIsPrintedWithItsDigitsAndOrigin) {
  HardwareCeilings cpu;
  cpu.name = "cpu: AMD EPYC";
  cpu.fp16_tflops = 0.0312;
  cpu.source = "measured: blocked GEMM";
  EXPECT_EQ(describe_fp16_rate(cpu), "0.0312 TFLOP/s fp16 (measured)");
  cpu.fp16_tflops = 0;
  cpu.fp32_tflops = 0.05;
  EXPECT_EQ(describe_fp16_rate(cpu), "0.05 TFLOP/s fp32 (measured; no fp16 rate)");
  EXPECT_EQ(describe_fp16_rate(find_datasheet("H200").value()), "989 TFLOP/s fp16 (datasheet)");
}

}  // namespace
}  // namespace crosspoint::analysis
