// Report building blocks: SVG plots (well-formed, points where the frame puts them),
// Markdown/HTML tables, the study report, and the crosspoint roofline command end to end.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "analysis/cell_measurement.h"
#include "analysis/gpu_ceilings.h"
#include "analysis/markdown_table.h"
#include "analysis/study_analysis.h"
#include "analysis/study_report.h"
#include "analysis/svg_plot.h"
#include "study_fixture.h"

namespace crosspoint::analysis {
namespace {

// A small XML well-formedness check: every tag closes in order, attributes are quoted,
// no stray '<' or unescaped '&'. Enough to catch a broken writer.
::testing::AssertionResult is_well_formed_xml(const std::string& text) {
  std::vector<std::string> stack;
  size_t i = 0;
  while (i < text.size()) {
    if (text[i] == '&') {
      const size_t end = text.find(';', i);
      if (end == std::string::npos || end - i > 8) return ::testing::AssertionFailure() << "bare & at " << i;
      i = end + 1;
      continue;
    }
    if (text[i] != '<') {
      ++i;
      continue;
    }
    const size_t end = text.find('>', i);
    if (end == std::string::npos) return ::testing::AssertionFailure() << "unterminated tag at " << i;
    std::string tag = text.substr(i + 1, end - i - 1);
    if (tag.find('<') != std::string::npos) return ::testing::AssertionFailure() << "'<' inside tag at " << i;
    size_t quotes = 0;
    for (char c : tag) quotes += c == '"';
    if (quotes % 2 != 0) return ::testing::AssertionFailure() << "unbalanced quotes in <" << tag << ">";
    if (!tag.empty() && tag[0] == '/') {
      const std::string name = tag.substr(1);
      if (stack.empty() || stack.back() != name)
        return ::testing::AssertionFailure()
               << "</" << name << "> closes <" << (stack.empty() ? "" : stack.back()) << ">";
      stack.pop_back();
    } else if (tag.empty() || tag.back() != '/') {
      stack.push_back(tag.substr(0, tag.find_first_of(" \n")));
    }
    i = end + 1;
  }
  if (!stack.empty()) return ::testing::AssertionFailure() << "<" << stack.back() << "> never closed";
  return ::testing::AssertionSuccess();
}

struct Point {
  std::string series;
  double x, y, cx, cy;
};

// Every element with class="point" of a rendered SVG.
std::vector<Point> points_of(const std::string& svg) {
  std::vector<Point> out;
  const std::regex circle(
      R"re(<circle class="point" data-series="([^"]*)" data-x="([^"]*)" data-y="([^"]*)" cx="([^"]*)" cy="([^"]*)")re");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), circle); it != std::sregex_iterator(); ++it) {
    out.push_back({(*it)[1], std::stod((*it)[2]), std::stod((*it)[3]), std::stod((*it)[4]), std::stod((*it)[5])});
  }
  return out;
}

TEST(SvgPlot, LinePlotPointsLandWhereTheLogFramePutsThem) {
  LinePlot plot;
  plot.title = "TPOT <by> precision & concurrency";
  plot.series = {{"fp16", {{1, 57.03}, {10, 60.68}, {100, 97.72}}, false},
                 {"w4a16", {{100, 75.05}, {1, 27.79}, {10, 30.04}}, true}};
  const std::string svg = render_line_plot(plot);
  EXPECT_TRUE(is_well_formed_xml(svg));
  EXPECT_NE(svg.find("TPOT &lt;by&gt; precision &amp; concurrency"), std::string::npos);
  const PlotFrame frame = line_plot_frame(plot);
  const std::vector<Point> points = points_of(svg);
  ASSERT_EQ(points.size(), 6u);
  for (const Point& p : points) {
    EXPECT_NEAR(p.cx, frame.map_x(p.x), 0.01);
    EXPECT_NEAR(p.cy, frame.map_y(p.y), 0.01);
    EXPECT_GT(p.cx, frame.left);
    EXPECT_LT(p.cx, frame.width - frame.right);
    EXPECT_GT(p.cy, frame.top);
    EXPECT_LT(p.cy, frame.height - frame.bottom);
  }
  // Log x: 10 sits halfway between 1 and 100; a higher TPOT is drawn higher (smaller y).
  EXPECT_NEAR(frame.map_x(10) - frame.map_x(1), frame.map_x(100) - frame.map_x(10), 1e-9);
  EXPECT_LT(frame.map_y(97.72), frame.map_y(57.03));
  EXPECT_NE(svg.find("stroke-dasharray"), std::string::npos);  // the dashed series
}

TEST(SvgPlot, GroupedBarsHaveHeightsProportionalToValues) {
  GroupedBarChart chart;
  chart.title = "throughput";
  chart.series_names = {"a", "b"};
  chart.groups = {{"conc 1", {10, 20}}, {"conc 10", {40, -1}}};  // -1: missing
  const std::string svg = render_grouped_bars(chart);
  EXPECT_TRUE(is_well_formed_xml(svg));
  const std::regex bar(
      R"re(<rect class="point" data-series="([^"]*)" data-x="[^"]*" data-y="([^"]*)" x="[^"]*" y="[^"]*" width="[^"]*" height="([^"]*)")re");
  std::vector<std::pair<double, double>> value_height;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), bar); it != std::sregex_iterator(); ++it)
    value_height.emplace_back(std::stod((*it)[2]), std::stod((*it)[3]));
  ASSERT_EQ(value_height.size(), 3u);
  for (const auto& [value, height] : value_height) {
    EXPECT_NEAR(height / value, value_height[0].second / value_height[0].first, 1e-3);
  }
}

TEST(SvgPlot, RooflineHasTheRidgeAndEveryPoint) {
  RooflinePlot plot;
  plot.title = "roofline";
  plot.bandwidth_gb_s = 300;
  plot.ceilings = {{"fp16", 121}};
  plot.points = {{"fp16", "c=1", 1.0, 0.27}, {"fp16", "c=100", 62.3, 9.8}, {"w4a16", "c=100", 211, 15.9}};
  const std::string svg = render_roofline_plot(plot);
  EXPECT_TRUE(is_well_formed_xml(svg));
  const PlotFrame frame = roofline_plot_frame(plot);
  EXPECT_TRUE(frame.log_x && frame.log_y);
  EXPECT_LE(frame.x_min, 1.0);
  EXPECT_GE(frame.x_max, 403);
  const std::vector<Point> points = points_of(svg);
  ASSERT_EQ(points.size(), 3u);
  for (const Point& p : points) {
    EXPECT_NEAR(p.cx, frame.map_x(p.x), 0.01);
    EXPECT_NEAR(p.cy, frame.map_y(p.y), 0.01);
  }
  // The roof's corner is at the ridge (403.3 FLOP/byte, 121 TFLOP/s).
  const std::regex roof(R"re(<polyline class="roof" points="([^,]+),([^ ]+) ([^,]+),([^ ]+) )re");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(svg, m, roof));
  EXPECT_NEAR(std::stod(m[3]), frame.map_x(121e12 / 300e9), 0.01);
  EXPECT_NEAR(std::stod(m[4]), frame.map_y(121), 0.01);
  // Every point lies on or under the roof.
  for (const auto& p : plot.points) EXPECT_LE(p.achieved_tflops, std::min(121.0, 0.3 * p.arithmetic_intensity));
}

TEST(Tables, MarkdownAndHtmlEscape) {
  TextTable t;
  t.header = {"name", "value"};
  t.right_align = {false, true};
  t.rows = {{"a|b", "1"}, {"<x>", "2"}};
  const std::string md = render_markdown_table(t);
  EXPECT_EQ(md, "| name | value |\n|---|---:|\n| a\\|b | 1 |\n| <x> | 2 |\n");
  const std::string html = render_html_table(t);
  EXPECT_TRUE(is_well_formed_xml(html));
  EXPECT_NE(html.find("&lt;x&gt;"), std::string::npos);
  EXPECT_NE(html.find("<td class=\"num\">2</td>"), std::string::npos);
}

TEST(StudyReport, ReproducesTheStudysFiguresAndIsSelfContained) {
  const StudyResults study = testing::load_study_or_die();
  AnalysisOptions options;
  options.hardware = find_datasheet("L4").value();
  auto analysis = analyze_study(study, options);
  ASSERT_TRUE(analysis.is_ok()) << analysis.status().to_string();
  const ReportFiles report = render_study_report(study, analysis.value());
  for (const char* text :
       {"| fp16 | 1 | 1.0 | 15.34 | 15.23 | 1.0 | 403 | 51.1 | 57.03 | 89.7 % | 0.22 % |",
        "crossover w4a16 -> w8a8-fp8 between 10 and 100",
        "the tail crosses first: w4a16 loses its p99 lead at concurrency 10", "| fp16 | 89.7 % | 84.3 % | 52.3 % |",
        "| w8a8-fp8 | 83.9 % | 78.6 % | 44.0 % |", "| w4a16 | 67.9 % | 62.8 % | 25.1 % |", "24.97", "233.5"}) {
    EXPECT_NE(report.markdown.find(text), std::string::npos) << text;
  }
  EXPECT_EQ(report.figures.size(), 7u);  // the first screen's two and five below
  for (const auto& [name, svg] : report.figures) EXPECT_TRUE(is_well_formed_xml(svg)) << name;
  // Self-contained: every figure inline, nothing loaded from elsewhere.
  size_t num_svgs = 0;
  for (size_t at = report.html.find("<svg"); at != std::string::npos; at = report.html.find("<svg", at + 1)) ++num_svgs;
  EXPECT_EQ(num_svgs, 7u);
  for (const char* fetch : {"src=", "href=", "@import", "url("})
    EXPECT_EQ(report.html.find(fetch), std::string::npos) << fetch;
  const size_t body = report.html.find("<body>");
  ASSERT_NE(body, std::string::npos);
  const size_t body_end = report.html.find("</body>");
  ASSERT_NE(body_end, std::string::npos);
  EXPECT_TRUE(is_well_formed_xml(report.html.substr(body, body_end + 7 - body)));
}

// A split label (-tpN) beside the whole model: its server's throughput per device is 1/N of it,
// and the roofline is one rank's share.
TEST(StudyReport, ASplitGetsPerDeviceThroughputAndOneRanksRoofline) {
  StudyResults study = testing::load_study_or_die();
  PrecisionSetup split = *study.find_precision("fp16");
  split.label = "fp16-tp2";
  split.tensor_parallel_size = 2;
  study.precisions.push_back(split);
  std::vector<CellMeasurement> copies;
  for (const CellMeasurement& cell : study.cells) {
    if (cell.precision != "fp16") continue;
    copies.push_back(cell);
    copies.back().precision = "fp16-tp2";
  }
  study.cells.insert(study.cells.end(), copies.begin(), copies.end());
  AnalysisOptions options;
  options.hardware = find_datasheet("L4").value();
  auto analysis = analyze_study(study, options);
  ASSERT_TRUE(analysis.is_ok()) << analysis.status().to_string();
  const ReportFiles report = render_study_report(study, analysis.value());
  EXPECT_NE(report.markdown.find("output tok/s per device"), std::string::npos);
  // The verdict answers per device too, and the split is an option of its own beside fp16.
  EXPECT_NE(report.markdown.find("**Most throughput per device (output tok/s ÷ the devices a split uses):**"),
            std::string::npos);
  EXPECT_EQ(weight_group_of(study, "fp16-tp2"), "fp16-tp2");
  EXPECT_EQ(weight_group_of(study, "fp16"), "fp16");
  const RooflineCell* whole = nullptr;
  const RooflineCell* rank = nullptr;
  for (const RooflineCell& c : analysis->roofline) {
    if (c.concurrency != 1) continue;
    if (c.precision == "fp16") whole = &c;
    if (c.precision == "fp16-tp2") rank = &c;
  }
  ASSERT_TRUE(whole != nullptr && rank != nullptr);
  EXPECT_DOUBLE_EQ(rank->weight_bytes_per_step, whole->weight_bytes_per_step / 2);
  EXPECT_EQ(rank->tensor_parallel_size, 2);
  const CellMeasurement& fp16_at_1 = *std::find_if(study.cells.begin(), study.cells.end(), [](const auto& c) {
    return c.precision == "fp16" && c.concurrency == 1;
  });
  ASSERT_TRUE(fp16_at_1.output_throughput_tok_s.has_value());
  const std::string half = fmt::format("{:.1f}", *fp16_at_1.output_throughput_tok_s / 2);
  const size_t table = report.markdown.find("output tok/s per device");
  const size_t row = report.markdown.find("| fp16-tp2 |", table);
  ASSERT_NE(row, std::string::npos);
  EXPECT_NE(report.markdown.substr(row, report.markdown.find('\n', row) - row).find(half), std::string::npos) << half;
}

TEST(StudyResults, ASetupsRankCountIsAWholeNumber) {
  auto parse = [](const std::string& ranks) {
    return parse_study_results(
        R"({"precisions": [{"label": "fp16-tp2", "precision": "fp16", "tensor_parallel_size": )" + ranks +
            R"(}], "cells": [{"precision": "fp16-tp2", "max_concurrency": 1, "completed": 1}]})",
        "study.json");
  };
  auto two = parse("2");
  ASSERT_TRUE(two.is_ok()) << two.status().to_string();
  EXPECT_EQ(two->precisions[0].tensor_parallel_size, 2);
  for (const char* bad : {"1.5", "-2", "\"2\""}) {
    auto refused = parse(bad);
    ASSERT_FALSE(refused.is_ok()) << bad;
    EXPECT_NE(refused.status().message().find("tensor_parallel_size"), std::string::npos) << refused.status().message();
  }
}

TEST(CellMeasurement, ReadsVllmResultsCurrentAndLegacy) {
  const std::string dir = std::string(CROSSPOINT_FIXTURES_DIR) + "/analysis/";
  auto current = load_cell_measurements(dir + "vllm_result_conc4.json", "w4a16");
  ASSERT_TRUE(current.is_ok()) << current.status().to_string();
  ASSERT_EQ(current->size(), 1u);
  const CellMeasurement& cell = current->front();
  EXPECT_EQ(cell.precision, "w4a16");
  EXPECT_EQ(cell.concurrency, 4);
  EXPECT_EQ(cell.median_tpot_ms, 60.0);
  EXPECT_EQ(cell.p99_itl_ms, 75.0);
  EXPECT_FALSE(cell.request_goodput_req_s.has_value());  // null in the file
  EXPECT_EQ(cell.mean_running_batch, 3.6);
  EXPECT_EQ(cell.num_preemptions, 0);
  EXPECT_EQ(cell.output_lens.size(), 4u);
  auto legacy = load_cell_measurements(dir + "vllm_results_legacy.jsonl", "fp16");
  ASSERT_TRUE(legacy.is_ok()) << legacy.status().to_string();
  ASSERT_EQ(legacy->size(), 2u);
  EXPECT_EQ((*legacy)[1].request_goodput_req_s, 0.8);  // "request_goodput:" with the colon
  EXPECT_EQ((*legacy)[1].concurrency, 10);
  // Without a label the model_id is used.
  EXPECT_EQ(load_cell_measurements(dir + "vllm_results_legacy.jsonl").value()[0].precision, "m");
}

TEST(CellMeasurement, ReadsCrosspointBenchServerMetrics) {
  // The shape src/bench/result_json.cc writes: a server_metrics object with mean/max running.
  auto cell = parse_cell_measurement(nlohmann::json::parse(R"({
      "label": "openai-chat", "max_concurrency": 8, "median_tpot_ms": 40.0,
      "server_metrics": {"available": true, "mean_running": 6.5, "max_running": 8, "num_preemptions": 2}})"),
                                     "bench.json", "fp16");
  ASSERT_TRUE(cell.is_ok()) << cell.status().to_string();
  EXPECT_EQ(cell->mean_running_batch, 6.5);
  EXPECT_EQ(cell->peak_running_batch, 8);
  EXPECT_EQ(cell->num_preemptions, 2);
}

TEST(CellMeasurement, BadInputNamesFileAndKey) {
  auto bad = parse_cell_measurement(nlohmann::json::parse(R"({"precision": "fp16", "median_tpot_ms": [1]})"), "r.json");
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("r.json"), std::string::npos);
  EXPECT_NE(bad.status().message().find("median_tpot_ms"), std::string::npos);
  EXPECT_FALSE(parse_cell_measurement(nlohmann::json::parse(R"({"median_tpot_ms": 1})"), "r.json").is_ok());
  EXPECT_EQ(load_cell_measurements("/nonexistent.json").status().code(), StatusCode::kNotFound);
}

// Runs the crosspoint binary; returns stdout and sets *exit_code.
std::string run_crosspoint(const std::string& args, int* exit_code) {
  const std::string command = std::string(CROSSPOINT_BINARY) + " " + args + " 2>&1";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
  std::string out;
  std::array<char, 4096> buffer;
  while (pipe && fgets(buffer.data(), buffer.size(), pipe.get())) out += buffer.data();
  const int status = pclose(pipe.release());
  *exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

TEST(RooflineCommand, StudyJsonReproducesTheHeadlineNumbers) {
  int code = 0;
  const std::string out = run_crosspoint("roofline --study " + testing::study_fixture_path() + " --json", &code);
  ASSERT_EQ(code, 0) << out;
  const nlohmann::json json = nlohmann::json::parse(out);
  EXPECT_NEAR(json["hardware"]["critical_intensity_fp16"].get<double>(), 403, 0.5);
  const nlohmann::json& first = json["roofline"][0];
  EXPECT_EQ(first["precision"], "fp16");
  EXPECT_NEAR(first["bound_tpot_ms"].get<double>(), 51.1, 0.05);
  EXPECT_NEAR(first["bandwidth_utilisation"].get<double>(), 0.897, 0.0005);
  EXPECT_NEAR(first["compute_utilisation"].get<double>(), 0.0022, 0.00005);
  const nlohmann::json& median = json["metrics"][0];
  EXPECT_EQ(median["metric"], "median TPOT");
  EXPECT_EQ(median["crossovers"][0]["concurrency_below"], 10);
  EXPECT_EQ(median["crossovers"][0]["concurrency_above"], 100);
}

TEST(RooflineCommand, OtherEnginesResultsWithAConfigAndBadInputs) {
  const std::string dir = std::string(CROSSPOINT_FIXTURES_DIR) + "/analysis/";
  int code = 0;
  const std::string out =
      run_crosspoint("roofline --results " + dir + "vllm_result_conc4.json --precision w4a16 --hardware L4 --config " +
                         dir + "qwen2_5_7b_config.json --json",
                     &code);
  ASSERT_EQ(code, 0) << out;
  const nlohmann::json json = nlohmann::json::parse(out);
  const nlohmann::json& cell = json["roofline"][0];
  // W4A16 linears + fp16 lm_head, plus 3.6 sequences x 350 tokens x 57,344 B of KV.
  EXPECT_NEAR(cell["weight_bytes_per_step"].get<double>() / 1e9, 4.48, 0.01);
  EXPECT_NEAR(cell["kv_bytes_per_step"].get<double>(), 3.6 * 350 * 57344, 1);
  EXPECT_EQ(json["capacity"][0]["worst_case_concurrency"].get<double>(), 100000.0 / 4096);
  // Errors are one line naming what is wrong, exit code 1.
  std::string error = run_crosspoint("roofline --results /nonexistent.json --hardware L4", &code);
  EXPECT_EQ(code, 1);
  EXPECT_NE(error.find("/nonexistent.json"), std::string::npos) << error;
  error = run_crosspoint(
      "roofline --results " + dir + "vllm_result_conc4.json --precision w4a16 --hardware Z1 --model-params 7e9", &code);
  EXPECT_EQ(code, 1);
  EXPECT_NE(error.find("Z1"), std::string::npos) << error;
  error = run_crosspoint("roofline --results " + dir + "vllm_result_conc4.json --precision w4a16 --hardware L4", &code);
  EXPECT_EQ(code, 1);
  EXPECT_NE(error.find("--model-params"), std::string::npos) << error;
}

TEST(HwinfoCommand, QuickJsonAndDatasheetFallback) {
  int code = 0;
  std::string out = run_crosspoint("hwinfo --quick --json --threads 2", &code);
  ASSERT_EQ(code, 0) << out;
  nlohmann::json json = nlohmann::json::parse(out);
  EXPECT_TRUE(json["measured"].get<bool>());
  EXPECT_GT(json["ceilings"]["bandwidth_gb_s"].get<double>(), 0);
  EXPECT_GT(json["ceilings"]["fp16_tflops"].get<double>(), 0);
  if (gpu_device_count() > 0) return;  // with a GPU, --device cuda measures it (tests/analysis/test_gpu_ceilings.cc)
  out = run_crosspoint("hwinfo --device cuda --hardware h200 --json", &code);
  ASSERT_EQ(code, 0) << out;
  json = nlohmann::json::parse(out);
  EXPECT_FALSE(json["measured"].get<bool>());
  EXPECT_EQ(json["ceilings"]["bandwidth_gb_s"].get<double>(), 4800);
  run_crosspoint("hwinfo --device cuda", &code);
  EXPECT_EQ(code, 1);
}

}  // namespace
}  // namespace crosspoint::analysis
