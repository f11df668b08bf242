// Shared by the analysis tests: the original study's measurements and its roofline.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "analysis/decode_cost.h"
#include "analysis/hardware_table.h"
#include "analysis/roofline.h"
#include "analysis/study_results.h"

namespace crosspoint::analysis::testing {

inline std::string study_fixture_path() { return std::string(CROSSPOINT_FIXTURES_DIR) + "/analysis/study_l4.json"; }

inline StudyResults load_study_or_die() {
  auto study = load_study_results(study_fixture_path());
  EXPECT_TRUE(study.is_ok()) << study.status().to_string();
  return study.is_ok() ? study.value() : StudyResults{};
}

// The study's own method: weights as loaded, 2 FLOPs per parameter, no KV term.
inline RooflineCell study_roofline(const StudyResults& study, const std::string& precision, double concurrency) {
  const PrecisionSetup* setup = study.find_precision(precision);
  EXPECT_NE(setup, nullptr) << precision;
  for (const CellMeasurement& cell : study.cells) {
    if (cell.precision == precision && cell.concurrency == concurrency) {
      const DecodeCost cost = decode_cost_from_params(study.model_num_params, setup->precision, setup->weight_bytes);
      return analyze_cell(cell, setup->precision, cost, find_datasheet(study.hardware_name).value());
    }
  }
  ADD_FAILURE() << "no cell " << precision << " @ " << concurrency;
  return {};
}

}  // namespace crosspoint::analysis::testing
