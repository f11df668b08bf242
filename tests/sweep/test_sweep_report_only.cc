// `crosspoint sweep --report-only`: the study and the report from the cells already in --out,
// with nothing measured, for a sweep cut short (a missing cell is left out, not run) and for
// cells that carry only the bench's summary (scripts/gpu/sweep_folder_from_results.py).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "sweep/sweep_runner.h"

namespace crosspoint::sweep {
namespace {

namespace fs = std::filesystem;

void write_json(const fs::path& path, const nlohmann::json& value) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << value.dump();
}

// A summary-only cell, as the rebuilding script writes it.
nlohmann::json summary_cell(const std::string& precision, int concurrency, double tpot_ms, double throughput) {
  return {{"precision", precision},
          {"max_concurrency", concurrency},
          {"completed", 100},
          {"failed", 0},
          {"duration", 10.0},
          {"output_throughput", throughput},
          {"median_tpot_ms", tpot_ms},
          {"p99_tpot_ms", tpot_ms * 3},
          {"total_input_tokens", 20000},
          {"total_output_tokens", 22000},
          {"server_metrics", {{"mean_running", concurrency * 0.8}, {"mean_kv_cache_usage", 0.01}}}};
}

struct Folder {
  fs::path root = fs::temp_directory_path() / ("crosspoint_report_only_" + std::to_string(getpid()));
  Folder() {
    fs::remove_all(root);
    fs::create_directories(root / "model");
    fs::copy_file(fs::path(CROSSPOINT_FIXTURES_DIR) / "analysis" / "qwen2_5_7b_config.json",
                  root / "model" / "config.json");
    write_json(root / "out" / "hwinfo.json",
               {{"name", "H200"}, {"bandwidth_gb_s", 4500.0}, {"fp16_tflops", 760.0}, {"fp8_tflops", 1450.0}});
  }
  ~Folder() { fs::remove_all(root); }
  SweepOptions options() const {
    SweepOptions o;
    o.report_only = true;
    o.device = "cuda";
    o.model = (root / "model").string();
    o.out_dir = (root / "out").string();
    o.precisions = {"fp16", "w4a16"};
    o.concurrency = {1, 100};
    o.max_model_len = 4096;
    return o;
  }
};

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(SweepReportOnly, ReportsTheCellsThereAndLeavesTheMissingOneOut) {
  Folder f;
  const fs::path cells = f.root / "out" / "cells";
  write_json(cells / "fp16-c1.json", summary_cell("fp16", 1, 4.0, 240));
  write_json(cells / "w4a16-c1.json", summary_cell("w4a16", 1, 2.2, 430));
  write_json(cells / "fp16-c100.json", summary_cell("fp16", 100, 8.4, 4900));
  write_json(cells / "w4a16-c100.json", summary_cell("w4a16", 100, 9.9, 5700));
  write_json(cells / "fp16-c57.json", summary_cell("fp16", 57, 6.6, 4400));  // a crossover level w4a16 never reached
  auto summary = run_sweep(f.options());
  ASSERT_TRUE(summary.is_ok()) << summary.status().to_string();
  EXPECT_EQ(summary->num_cells_run, 0);
  EXPECT_EQ(summary->num_cells_reused, 5);
  const std::string report = read_text(f.root / "out" / "report.md");
  EXPECT_NE(report.find("median TPOT: w4a16 leads up to concurrency 1, fp16 from 100"), std::string::npos) << report;
  // The workload means come from the bench's totals when the cells have no per-request lists.
  const nlohmann::json study = nlohmann::json::parse(read_text(f.root / "out" / "study.json"));
  EXPECT_DOUBLE_EQ(study["workload"]["mean_input_tokens"].get<double>(), 200.0);
  EXPECT_DOUBLE_EQ(study["workload"]["mean_output_tokens"].get<double>(), 220.0);
}

TEST(SweepReportOnly, RefusesAFolderWithoutCellsOrCeilingsAndAnAutoDevice) {
  Folder f;
  SweepOptions o = f.options();
  auto empty = run_sweep(o);
  ASSERT_FALSE(empty.is_ok());
  EXPECT_NE(empty.status().message().find("holds no finished cell"), std::string::npos) << empty.status().message();
  fs::remove(f.root / "out" / "hwinfo.json");
  auto no_ceilings = run_sweep(o);
  ASSERT_FALSE(no_ceilings.is_ok());
  EXPECT_NE(no_ceilings.status().message().find("hwinfo.json: no such file"), std::string::npos)
      << no_ceilings.status().message();
  o.device = "auto";
  auto automatic = run_sweep(o);
  ASSERT_FALSE(automatic.is_ok());
  EXPECT_NE(automatic.status().message().find("--device cpu or cuda"), std::string::npos)
      << automatic.status().message();
}

}  // namespace
}  // namespace crosspoint::sweep
