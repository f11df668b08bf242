// Shared by the analysis tests: the H200 KV-cache grid of 2026-12-03 from its committed results
// file (benchmarks/results/h200_2026-12-03_kv_grid.json), as a study.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "analysis/study_results.h"

namespace crosspoint::analysis::testing {

// The H200 sweep of 2026-12-03 (fp16 / W8A8-FP8 / W4A16 weights x fp16 / fp8 KV cache at 1,
// 64, 512) from its committed results file: the cells' headline numbers.
inline StudyResults kv_grid_study() {
  const std::string path =
      std::string(CROSSPOINT_FIXTURES_DIR) + "/../../benchmarks/results/h200_2026-12-03_kv_grid.json";
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  const nlohmann::json results = nlohmann::json::parse(text.str(), nullptr, false);
  EXPECT_FALSE(results.is_discarded()) << path;
  StudyResults study;
  for (const std::string label : {"fp16", "w8a8-fp8", "w4a16", "fp16+kv-fp8", "w8a8-fp8+kv-fp8", "w4a16+kv-fp8"}) {
    PrecisionSetup setup;
    setup.label = label;
    setup.precision = parse_precision(label.substr(0, label.find('+'))).value();
    study.precisions.push_back(setup);
  }
  for (const auto& row : results["results"]["sweep_cells"]) {
    const std::string name = row["cell"].get<std::string>();
    auto cell = parse_cell_measurement(row, path, name.substr(0, name.rfind("-c")));
    EXPECT_TRUE(cell.is_ok()) << cell.status().to_string();
    if (cell.is_ok()) study.cells.push_back(cell.value());
  }
  EXPECT_EQ(study.cells.size(), 18u);
  return study;
}

}  // namespace crosspoint::analysis::testing
