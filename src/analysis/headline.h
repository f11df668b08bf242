// The headline's comparison: one metric across weight precisions. A study with a KV-cache-dtype
// or prefix-caching axis serves each weight precision several ways ("w4a16", "w4a16+kv-fp8");
// comparing every label with every other makes the two ways of serving the leader the "two
// best", so their tie hides that both are far ahead of the next weight precision. Here each
// level keeps the best way of serving each weight precision, and those are compared.
#pragma once

#include <string>
#include <vector>

#include "analysis/crossover.h"
#include "analysis/study_results.h"

namespace crosspoint::analysis {

struct HeadlineMetric {
  Metric metric = Metric::kMedianTpot;
  // Per level, the best label of each weight precision compared (names are those labels).
  std::vector<LevelWinner> winners;
  // Changes of clear winner between weight precisions (named by the labels at the two levels).
  std::vector<Crossover> crossovers;
};

// The weight precision a label serves ("w4a16+kv-fp8" -> "w4a16"; a split "fp16-tp2" keeps its
// rank count, since it uses other hardware): the study's setup for the
// label where it has one, else the label itself.
std::string weight_group_of(const StudyResults& study, const std::string& label);

// The metric compared across weight precisions (winners_by_concurrency and find_crossovers on
// the best label of each weight precision per level). Without axis twins it equals those; with
// a single weight precision the labels themselves are compared.
HeadlineMetric headline_metric(const StudyResults& study, const std::vector<CellMeasurement>& cells, Metric metric,
                               double tie_tolerance);

}  // namespace crosspoint::analysis
