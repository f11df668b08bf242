// crosspoint roofline: the roofline, crossover and capacity analysis of benchmark results —
// ours, another engine's (vLLM-style result JSON), or the original study's (--study).
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "analysis/hardware_json.h"
#include "analysis/study_analysis.h"
#include "analysis/study_report.h"
#include "cli/cli_util.h"
#include "cli/commands.h"

namespace crosspoint::cli {

namespace {

constexpr const char* kStudyFixture = "tests/fixtures/analysis/study_l4.json";

// The committed study file: relative to the working directory, else to the directories above
// the executable (build-*/crosspoint lives one level below the repository).
Result<std::string> find_study_fixture() {
  if (std::filesystem::exists(kStudyFixture)) return std::string(kStudyFixture);
  std::error_code error;
  std::filesystem::path dir = std::filesystem::read_symlink("/proc/self/exe", error).parent_path();
  for (int up = 0; !error && up < 6 && !dir.empty(); ++up, dir = dir.parent_path()) {
    const std::filesystem::path candidate = dir / kStudyFixture;
    if (std::filesystem::exists(candidate)) return candidate.string();
    if (dir == dir.parent_path()) break;
  }
  return not_found(std::string(kStudyFixture) + ": not found from here or above the executable; pass --study FILE");
}

struct Options {
  std::string study_path;
  bool study = false;
  std::vector<std::string> result_files;
  std::string precision_label;
  std::string hardware;
  std::string hwinfo_file;
  double bandwidth_gb_s = 0, tflops = 0, fp8_tflops = 0;
  std::string config_path;
  double model_params = 0;
  double max_model_len = 0, kv_cache_tokens = 0;
};

Result<analysis::StudyResults> load_inputs(const Options& o) {
  analysis::StudyResults study;
  if (o.study) {
    std::string path = o.study_path;
    if (path.empty()) { CROSSPOINT_ASSIGN_OR_RETURN(path, find_study_fixture()); }
    CROSSPOINT_ASSIGN_OR_RETURN(study, analysis::load_study_results(path));
  }
  for (const std::string& file : o.result_files) {
    CROSSPOINT_ASSIGN_OR_RETURN(auto cells, analysis::load_cell_measurements(file, o.precision_label));
    for (auto& cell : cells) study.cells.push_back(std::move(cell));
  }
  if (study.cells.empty()) return invalid_argument("nothing to analyse: give --study or --results FILE...");
  if (o.max_model_len > 0) study.max_model_len = o.max_model_len;
  if (o.kv_cache_tokens > 0) {
    for (const auto& cell : study.cells) {
      if (study.find_precision(cell.precision) != nullptr) continue;
      auto precision = analysis::parse_precision(cell.precision);
      if (!precision.is_ok()) return precision.status();
      analysis::PrecisionSetup setup;
      setup.label = cell.precision;
      setup.precision = precision.value();
      setup.kv_cache_tokens = o.kv_cache_tokens;
      study.precisions.push_back(setup);
    }
  }
  if (study.title.empty()) study.title = "Roofline analysis";
  return study;
}

Result<analysis::HardwareCeilings> load_hardware(const Options& o, const analysis::StudyResults& study) {
  if (!o.hwinfo_file.empty()) return analysis::load_ceilings(o.hwinfo_file);
  if (o.bandwidth_gb_s > 0 || o.tflops > 0) {
    if (o.bandwidth_gb_s <= 0 || o.tflops <= 0) return invalid_argument("--bandwidth and --tflops go together");
    analysis::HardwareCeilings c;
    c.name = "given";
    c.bandwidth_gb_s = o.bandwidth_gb_s;
    c.fp16_tflops = o.tflops;
    c.fp8_tflops = o.fp8_tflops;
    c.source = "command line";
    return c;
  }
  const std::string name = !o.hardware.empty() ? o.hardware : study.hardware_name;
  if (name.empty())
    return invalid_argument("no hardware: give --hardware NAME, --hwinfo FILE or --bandwidth GB/s --tflops X");
  return analysis::find_datasheet(name);
}

}  // namespace

int run_roofline(int argc, char** argv) {
  CLI::App app{"Roofline, crossover and capacity analysis of benchmark results (any engine's)", "roofline"};
  Options o;
  analysis::AnalysisOptions options;
  bool json = false;
  std::string report_dir;
  auto* study = app.add_option("--study", o.study_path,
                               "the original L4 study (tests/fixtures/analysis/study_l4.json) or a study file")
                    ->expected(0, 1);
  app.add_option("--results", o.result_files, "vLLM-style bench result JSON files (one cell each, or JSON lines)");
  app.add_option("--precision", o.precision_label,
                 "precision label for results that carry none (fp16, w8a8-fp8, w4a16)");
  app.add_option("--hardware", o.hardware, "datasheet device (crosspoint hwinfo --list)");
  app.add_option("--hwinfo", o.hwinfo_file, "ceilings saved from crosspoint hwinfo --json");
  app.add_option("--bandwidth", o.bandwidth_gb_s, "memory bandwidth, GB/s")->check(CLI::PositiveNumber);
  app.add_option("--tflops", o.tflops, "fp16 matmul peak, TFLOP/s")->check(CLI::PositiveNumber);
  app.add_option("--fp8-tflops", o.fp8_tflops, "fp8 matmul peak, TFLOP/s")->check(CLI::PositiveNumber);
  app.add_option("--config", o.config_path, "model config.json (or its directory): exact bytes per precision");
  app.add_option("--model-params", o.model_params, "total parameters, e.g. 7.6e9 (when no config.json)")
      ->check(CLI::PositiveNumber);
  app.add_option("--max-model-len", o.max_model_len, "for the capacity planner")->check(CLI::PositiveNumber);
  app.add_option("--kv-cache-tokens", o.kv_cache_tokens, "KV capacity of the server(s), tokens")
      ->check(CLI::PositiveNumber);
  app.add_option("--kv-block-size", options.kv_block_size, "paged-KV block size for the capacity planner (default 1)")
      ->check(CLI::PositiveNumber);
  app.add_option("--tie-tolerance", options.tie_tolerance, "relative margin counted as a tie (default 0.02)");
  app.add_option("--resolution", options.bisection_resolution, "crossover resolution in concurrency (default 4)");
  app.add_flag("--json", json, "print the analysis as JSON");
  app.add_option("--report-dir", report_dir, "also write report.md, report.html and SVG figures here");
  if (int code = parse_or_exit_code(app, argc, argv); code >= 0) return code;
  o.study = study->count() > 0;

  auto inputs = load_inputs(o);
  if (!inputs.is_ok()) return report_error("roofline", inputs.status());
  auto hardware = load_hardware(o, inputs.value());
  if (!hardware.is_ok()) return report_error("roofline", hardware.status());
  options.hardware = hardware.value();
  options.model_num_params = o.model_params;
  if (!o.config_path.empty()) {
    auto shape = analysis::load_model_shape(o.config_path);
    if (!shape.is_ok()) return report_error("roofline", shape.status());
    options.model_shape = shape.value();
  }
  auto result = analysis::analyze_study(inputs.value(), options);
  if (!result.is_ok()) return report_error("roofline", result.status());
  const analysis::ReportFiles report = analysis::render_study_report(inputs.value(), result.value());
  if (!report_dir.empty()) {
    if (Status s = analysis::write_report(report_dir, report); !s.is_ok()) return report_error("roofline", s);
  }
  if (json) {
    std::printf("%s\n", analysis::study_analysis_to_json(result.value()).dump(2).c_str());
    return 0;
  }
  // The Markdown report reads well in a terminal; figures only exist as files.
  std::istringstream lines(report.markdown);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("![", 0) != 0) std::printf("%s\n", line.c_str());
  }
  if (!report_dir.empty()) std::printf("report written to %s/report.html\n", report_dir.c_str());
  return 0;
}

}  // namespace crosspoint::cli
