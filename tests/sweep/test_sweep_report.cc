// The sweep's own report sections on the original study's measurements (the L4 study file
// of tests/fixtures/analysis): the recommendation must name the study's crossover (W4A16
// up to 10, W8A8-FP8 from 100 for median TPOT), apply the SLO to the measured cells, and
// carry the quality deltas.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "analysis/hardware_table.h"
#include "analysis/study_analysis.h"
#include "analysis/study_report.h"
#include "analysis/study_results.h"
#include "sweep/sweep_report.h"

namespace crosspoint::sweep {
namespace {

struct StudyFixture {
  analysis::StudyResults study;
  analysis::StudyAnalysis analysis;
};

StudyFixture load_l4_study(std::optional<analysis::ServiceLevelObjective> slo = std::nullopt) {
  auto study = analysis::load_study_results(std::string(CROSSPOINT_FIXTURES_DIR) + "/analysis/study_l4.json");
  EXPECT_TRUE(study.is_ok()) << study.status().to_string();
  analysis::AnalysisOptions options;
  options.hardware = analysis::find_datasheet("L4").value();
  options.tie_tolerance = 0.02;
  options.slo = slo;
  auto result = analysis::analyze_study(study.value(), options);
  EXPECT_TRUE(result.is_ok()) << result.status().to_string();
  return {study.value(), result.value()};
}

TEST(SweepReport, RecommendationNamesTheStudysCrossover) {
  const StudyFixture f = load_l4_study();
  SweepOptions o;
  o.precisions = {"fp16", "w8a8-fp8", "w4a16"};
  const SweepSections s = render_sweep_sections(o, f.study, f.analysis, {}, {});
  EXPECT_NE(s.markdown.find("## Recommendation"), std::string::npos);
  // Each side of the flip with the two best values there (the study has no per-request lists,
  // so no intervals).
  EXPECT_NE(s.markdown.find("median TPOT: w4a16 wins up to concurrency 10 (30.04 vs 37.27 ms), w8a8-fp8 from 100 "
                            "(66.52 vs 75.05 ms)"),
            std::string::npos)
      << s.markdown;
  EXPECT_NE(s.markdown.find("up to concurrency 10 serve w4a16; from 100 up serve w8a8-fp8"), std::string::npos)
      << s.markdown;
  // No eval ran: the sentence must not point at quality costs that are not there.
  EXPECT_NE(s.markdown.find("quality was not measured in this sweep"), std::string::npos) << s.markdown;
  EXPECT_EQ(s.markdown.find("quality costs listed above"), std::string::npos) << s.markdown;
  EXPECT_NE(s.html.find("<h2>Recommendation</h2>"), std::string::npos);
}

// A metric without a crossover whose last level is a tie (the H200 sweep's throughput at 100:
// W8A8-FP8 5,320.5 against W4A16 5,289.3 tok/s): the sentence names the tie and quotes only the
// levels the winner really led, never the tie's values as if they were the winner's.
TEST(SweepReport, NoCrossoverSentenceNamesTiesApart) {
  StudyFixture f = load_l4_study();
  analysis::MetricAnalysis* throughput = nullptr;
  for (auto& m : f.analysis.metrics) {
    if (m.metric == analysis::Metric::kOutputThroughput) throughput = &m;
  }
  ASSERT_NE(throughput, nullptr);
  ASSERT_TRUE(throughput->crossovers.empty());
  ASSERT_FALSE(throughput->winners.empty());
  ASSERT_FALSE(throughput->winners.back().tie);
  analysis::LevelWinner last;  // a tied level above the measured ones
  last.concurrency = throughput->winners.back().concurrency * 10;
  last.runner_up = "w4a16";
  last.best_value = 5320.5;
  last.runner_up_value = 5289.3;
  last.margin = 0.006;
  last.tie = true;
  throughput->winners.push_back(last);
  SweepOptions o;
  o.precisions = {"fp16", "w8a8-fp8", "w4a16"};
  const SweepSections s = render_sweep_sections(o, f.study, f.analysis, {}, {});
  const std::string tie_note = fmt::format("; a tie (within 2 %) at {:g}; no crossover", last.concurrency);
  EXPECT_NE(s.markdown.find(tie_note), std::string::npos) << s.markdown;
  EXPECT_EQ(s.markdown.find("5320.5"), std::string::npos) << s.markdown;
  EXPECT_NE(s.markdown.find("wins at every measured concurrency where one precision is ahead"), std::string::npos)
      << s.markdown;
}

// A tie is named by the precisions it cannot tell apart: a grid of weights x KV dtypes can tie
// output throughput at every level, each time between the two KV dtypes of one weight precision
// (w4a16 at 1, w8a8-fp8 at 512); unnamed, that read as if the weights did not matter.
TEST(SweepReport, TiesNameThePrecisionsTheyCannotTellApart) {
  StudyFixture f = load_l4_study();
  analysis::MetricAnalysis* throughput = nullptr;
  for (auto& m : f.analysis.metrics) {
    if (m.metric == analysis::Metric::kOutputThroughput) throughput = &m;
  }
  ASSERT_NE(throughput, nullptr);
  throughput->crossovers.clear();
  throughput->winners.resize(2);
  const std::vector<std::pair<std::string, std::string>> pairs = {{"w4a16", "w4a16+kv-fp8"},
                                                                  {"w8a8-fp8", "w8a8-fp8+kv-fp8"}};
  for (size_t i = 0; i < 2; ++i) {
    analysis::LevelWinner& w = throughput->winners[i];
    w.concurrency = i == 0 ? 1 : 512;
    w.winner.clear();
    w.leader = pairs[i].first;
    w.runner_up = pairs[i].second;
    w.contenders = {pairs[i].first, pairs[i].second};
    w.margin = 0.001;
    w.tie = true;
    w.not_separable = false;
  }
  SweepOptions o;
  o.precisions = {"fp16", "w8a8-fp8", "w4a16"};
  const SweepSections s = render_sweep_sections(o, f.study, f.analysis, {}, {});
  EXPECT_NE(s.markdown.find("a tie (within 2 %) at every measured concurrency: 1 (w4a16, w4a16+kv-fp8), 512 "
                            "(w8a8-fp8, w8a8-fp8+kv-fp8)."),
            std::string::npos)
      << s.markdown;
  EXPECT_EQ(analysis::describe_level(throughput->winners[1], analysis::Metric::kOutputThroughput),
            "tie at 512 (0.1 %: w8a8-fp8, w8a8-fp8+kv-fp8)");
}

TEST(SweepReport, SloPicksThePrecisionThatHoldsItLongest) {
  SweepOptions o;
  o.precisions = {"fp16", "w8a8-fp8", "w4a16"};
  // The study's p99 TPOT: fp16 57.25 ms at 1 and 531.82 at 100; W8A8-FP8 321.48 at 100 (none
  // recorded at 1); W4A16 492.34 at 100. Within 60 ms only fp16 at 1 holds.
  o.slo_tpot_ms = 60;
  const StudyFixture f = load_l4_study(slo_of(o));
  const SweepSections s = render_sweep_sections(o, f.study, f.analysis, {}, {});
  EXPECT_NE(s.markdown.find("SLO (p99 TPOT ≤ 60 ms): serve fp16 — it meets the SLO up to concurrency 1, the highest "
                            "of the precisions (fp16: up to 1, w8a8-fp8: never, w4a16: never)."),
            std::string::npos)
      << s.markdown;
  // An SLO nothing meets says so.
  o.slo_tpot_ms = 1;
  const StudyFixture strict = load_l4_study(slo_of(o));
  const SweepSections none = render_sweep_sections(o, strict.study, strict.analysis, {}, {});
  EXPECT_NE(none.markdown.find("no precision met it"), std::string::npos) << none.markdown;
}

TEST(SweepReport, QualityAndStartupTables) {
  const StudyFixture f = load_l4_study();
  SweepOptions o;
  o.precisions = {"fp16", "w4a16"};
  QualityResult q;
  q.precision = "w4a16";
  q.perplexity = 11.0;
  q.reference_perplexity = 10.0;
  q.greedy_agreement = 0.9;
  q.mean_kl_divergence = 0.0123;
  q.num_predicted_tokens = 500;
  ServerStartup startup;
  startup.load_s = 1.5;
  startup.startup_s = 9.25;
  startup.weights_gib = 5.5;
  startup.kv_cache_tokens = 102192;
  const SweepSections s = render_sweep_sections(o, f.study, f.analysis, {{"w4a16", startup}}, {q});
  EXPECT_NE(s.markdown.find("| w4a16 | 11.000 | 10.000 | +10.00 % | 90.0 % | 0.01230 | 500 |"), std::string::npos)
      << s.markdown;
  EXPECT_NE(s.markdown.find("perplexity 11.000 vs 10.000 for fp16 (+10.00 %)"), std::string::npos);
  EXPECT_NE(s.markdown.find("mean KL divergence from fp16 0.01230 nats"), std::string::npos);
  EXPECT_NE(s.markdown.find("| w4a16 | 1.50 | 9.25 | 5.500 |"), std::string::npos) << s.markdown;
  EXPECT_NE(s.html.find("<table"), std::string::npos);
}

TEST(SweepReport, TheTitleNamesTheModelByItsConfigWhenItHasAName) {
  const std::filesystem::path root = std::filesystem::temp_directory_path() / "crosspoint-sweep-title-test";
  std::filesystem::remove_all(root);
  std::filesystem::create_directories(root / "fp16");
  std::filesystem::create_directories(root / "out");
  SweepOptions o;
  o.precisions = {"fp16"};
  o.out_dir = (root / "out").string();
  // Without a name in config.json: the folder's name.
  std::ofstream(root / "fp16" / "config.json") << R"({"model_type": "qwen2"})";
  auto plain = build_study_json(o, (root / "fp16").string(), {1});
  ASSERT_TRUE(plain.is_ok()) << plain.status().to_string();
  EXPECT_EQ(plain.value()["model"]["name"], "fp16");
  // transformers' _name_or_path (a hub id or a path): its last component.
  std::ofstream(root / "fp16" / "config.json") << R"({"_name_or_path": "Qwen/Qwen2.5-7B-Instruct"})";
  auto named = build_study_json(o, (root / "fp16").string(), {1});
  ASSERT_TRUE(named.is_ok()) << named.status().to_string();
  EXPECT_EQ(named.value()["model"]["name"], "Qwen2.5-7B-Instruct");
  EXPECT_EQ(named.value()["title"].get<std::string>().rfind("crosspoint sweep: Qwen2.5-7B-Instruct on ", 0), 0u)
      << named.value()["title"];
  EXPECT_EQ(named.value()["source"].get<std::string>().find("cells measured"), std::string::npos)
      << "no cell, no measurement time: " << named.value()["source"];
  std::filesystem::remove_all(root);
}

TEST(SweepReport, TheSourceLineSaysWhenTheCellsWereMeasured) {
  // A resumed sweep's cells come from several runs: the source gives their span (the bench's
  // vLLM-style dates), not only when the report was written.
  const std::filesystem::path root = std::filesystem::temp_directory_path() / "crosspoint-sweep-span-test";
  std::filesystem::remove_all(root);
  std::filesystem::create_directories(root / "out" / "cells");
  SweepOptions o;
  o.precisions = {"fp16", "w4a16"};
  o.out_dir = (root / "out").string();
  std::ofstream(root / "out" / "cells" / "fp16-c1.json") << R"({"date": "20261130-065148", "completed": 1})";
  std::ofstream(root / "out" / "cells" / "w4a16-c1.json") << R"({"date": "20261130-070652", "completed": 1})";
  auto study = build_study_json(o, (root / "fp16").string(), {1});
  ASSERT_TRUE(study.is_ok()) << study.status().to_string();
  const std::string source = study.value()["source"].get<std::string>();
  EXPECT_NE(source.find("cells measured 2026-11-30 06:51 to 07:06 (bench clock); report "), std::string::npos)
      << source;
  std::filesystem::remove_all(root);
}

}  // namespace
}  // namespace crosspoint::sweep

namespace crosspoint::sweep {
namespace {

// One run of a cell with per-request lists: 24 requests of 16 tokens whose TPOT spreads
// `spread` around `tpot`, and the guard's record (others' CPU seconds over a 10 s run).
analysis::CellMeasurement measured_cell(const std::string& precision, double concurrency, double tpot, double spread,
                                        double other_cpu_s) {
  analysis::CellMeasurement c;
  c.precision = precision;
  c.concurrency = concurrency;
  c.num_completed = 24;
  c.duration_s = 10;
  for (int i = 0; i < 24; ++i) {
    const double t = tpot + spread * ((i % 7) - 3) / 3.0;
    c.request_tpot_ms.push_back(t);
    c.request_ttft_ms.push_back(40);
    c.request_e2el_ms.push_back(40 + 15 * t);
    c.request_output_tokens.push_back(16);
    c.request_itl_ms.push_back(std::vector<double>(15, t));
  }
  c.median_tpot_ms = analysis::linear_percentile(c.request_tpot_ms, 50);
  c.output_throughput_tok_s = 24 * 16 / 10.0 * (3.0 / tpot);
  c.run_output_throughputs = {*c.output_throughput_tok_s};
  analysis::InterferenceRecord r;
  r.wall_s = 10;
  r.num_cores = 2;
  r.own_cpu_s = 15;
  r.busy_cpu_s = 15 + other_cpu_s;
  c.machine = {r};
  return c;
}

TEST(SweepReport, WhenNoLevelSeparatesTheSpeedQualityPicksAndTheRunCapIsNamed) {
  analysis::StudyResults study;
  study.model_num_params = 135e6;
  // 5 % apart with wide spreads at both levels: nothing separable on speed.
  study.cells = {measured_cell("fp16", 1, 2.1, 0.6, 0), measured_cell("w4a16", 1, 2.0, 0.6, 0),
                 measured_cell("fp16", 2, 2.1, 0.6, 0), measured_cell("w4a16", 2, 2.0, 0.6, 0)};
  analysis::AnalysisOptions options;
  options.hardware = analysis::find_datasheet("L4").value();
  auto a = analysis::analyze_study(study, options);
  ASSERT_TRUE(a.is_ok()) << a.status().to_string();
  SweepOptions o;
  o.precisions = {"fp16", "w4a16"};
  o.out_dir = (std::filesystem::temp_directory_path() / "crosspoint_sweep_report_speed_tie").string();
  std::filesystem::create_directories(o.out_dir);
  std::ofstream(o.out_dir + "/budget.json") << R"({"time_budget_s": 300, "measure_s": 120, "extra_runs": 14,
      "runs_capped": true, "max_runs_per_cell": 8,
      "undecided": [{"metric": "median TPOT", "concurrency": 1, "leader": "w4a16", "runner_up": "fp16"}]})";
  QualityResult q;
  q.precision = "w4a16";
  q.perplexity = 30;
  q.reference_perplexity = 20;
  const SweepSections s = render_sweep_sections(o, study, a.value(), {}, {q});
  EXPECT_NE(s.markdown.find("In short: on median TPOT this sample cannot tell w4a16 and fp16 apart at 1, 2. Speed "
                            "does not decide between them here, so quality does: serve fp16"),
            std::string::npos)
      << s.markdown;
  EXPECT_NE(s.markdown.find("their cells reached --max-runs-per-cell (8 runs) before the intervals separated: not "
                            "separable at this sample size: median TPOT at 1 (w4a16 vs fp16)"),
            std::string::npos)
      << s.markdown;
  std::filesystem::remove_all(o.out_dir);
}

TEST(SweepReport, WinnersCarryIntervalsTiesAndTheGuard) {
  analysis::StudyResults study;
  study.model_num_params = 135e6;
  // At 1 w4a16 is clearly ahead; at 4 the two are 5 % apart with wide spreads (not
  // separable); fp16 at 1 ran while others used 0.6 cores.
  study.cells = {measured_cell("fp16", 1, 3.0, 0.05, 6), measured_cell("w4a16", 1, 2.0, 0.05, 0),
                 measured_cell("fp16", 4, 2.1, 0.6, 0), measured_cell("w4a16", 4, 2.0, 0.6, 0)};
  analysis::AnalysisOptions options;
  options.hardware = analysis::find_datasheet("L4").value();
  auto a = analysis::analyze_study(study, options);
  ASSERT_TRUE(a.is_ok()) << a.status().to_string();
  const analysis::MetricAnalysis* tpot = nullptr;
  for (const auto& m : a.value().metrics) {
    if (m.metric == analysis::Metric::kMedianTpot) tpot = &m;
  }
  ASSERT_NE(tpot, nullptr);
  ASSERT_EQ(tpot->winners.size(), 2u);
  EXPECT_EQ(tpot->winners[0].winner, "w4a16");
  EXPECT_TRUE(tpot->winners[0].interfered);
  EXPECT_TRUE(tpot->winners[1].not_separable);

  SweepOptions o;
  o.precisions = {"fp16", "w4a16"};
  o.out_dir = (std::filesystem::temp_directory_path() / "crosspoint_sweep_report_intervals").string();
  std::filesystem::create_directories(o.out_dir);
  std::ofstream(o.out_dir + "/budget.json") << R"({"time_budget_s": 300, "measure_s": 290, "extra_runs": 2,
      "undecided": [{"metric": "median TPOT", "concurrency": 4, "leader": "w4a16", "runner_up": "fp16"}]})";
  const SweepSections s = render_sweep_sections(o, study, a.value(), {}, {});
  EXPECT_NE(s.markdown.find("w4a16 wins at every measured concurrency where one precision is ahead (1.99 ["),
            std::string::npos)
      << s.markdown;
  EXPECT_NE(s.markdown.find("ms at 1, measured under interference)"), std::string::npos) << s.markdown;
  EXPECT_NE(s.markdown.find("not separable at this sample size at 4"), std::string::npos) << s.markdown;
  EXPECT_NE(s.markdown.find("Sample size — measuring took 290 s of a 300 s time budget, 2 extra run(s)"),
            std::string::npos)
      << s.markdown;
  EXPECT_NE(s.markdown.find("the budget was too small to decide: not separable at this sample size: median TPOT at "
                            "4 (w4a16 vs fp16)"),
            std::string::npos)
      << s.markdown;
  EXPECT_NE(s.markdown.find("Busy machine — 1 of 4 cells"), std::string::npos) << s.markdown;

  // The analysis report: the table cell with its interval and mark, the findings' wording,
  // error bars in the figure, the measurement-quality section.
  const analysis::ReportFiles files = analysis::render_study_report(study, a.value());
  EXPECT_NE(files.markdown.find("## Measurement quality"), std::string::npos);
  EXPECT_NE(files.markdown.find("fp16 at 1: others used 0.60 cores on average"), std::string::npos) << files.markdown;
  EXPECT_NE(files.markdown.find("not separable at 4 at this sample size (intervals overlap: w4a16 1.90 ms ["),
            std::string::npos)
      << files.markdown;
  EXPECT_NE(files.markdown.find("[measured under interference]"), std::string::npos);
  EXPECT_NE(files.markdown.find(" *"), std::string::npos);
  bool error_bars = false;
  for (const auto& [name, svg] : files.figures)
    error_bars = error_bars || svg.find("class=\"error-bar\"") != std::string::npos;
  EXPECT_TRUE(error_bars);
  std::filesystem::remove_all(o.out_dir);
}

}  // namespace
}  // namespace crosspoint::sweep
