// Quality from lm-evaluation-harness: the results file the harness writes (or
// scripts/eval/lm_eval_served.sh's, which keeps it under "results") for a served precision,
// given to the sweep with --harness-results PRECISION=FILE, becomes a table of the report
// beside crosspoint eval's perplexity: each task's metrics with their standard errors per
// precision, and the difference from fp16 where fp16 was scored too.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/markdown_table.h"
#include "common/status.h"

namespace crosspoint::sweep {

struct HarnessScore {
  std::string task;
  std::string metric;  // "acc", "acc_norm", "exact_match"; "metric,filter" when the filter is not "none"
  double value = 0;
  std::optional<double> stderr_value;
};

// The scores of one results file: {"results": {task: {"acc,none": v, "acc_stderr,none": se, ...}}},
// sorted by task and metric. A file without a "results" object, or with no numeric metric,
// is an invalid_argument naming what is missing.
Result<std::vector<HarnessScore>> harness_scores_from_json(const nlohmann::json& file, const std::string& origin);

// Where the sweep keeps its copy of a precision's results file: OUT/quality/PRECISION.lm_eval.json.
std::string harness_results_path(const std::string& out_dir, const std::string& precision);

// "w4a16=/tmp/results.json" into the list, checking the precision is one of precisions and that
// it is not given twice.
Status parse_harness_results(const std::string& text, const std::vector<std::string>& precisions,
                             std::vector<std::pair<std::string, std::string>>& out);

// One row per (task, metric): the value ± stderr of each precision, then each other precision's
// difference from fp16 in points (when fp16 has the score).
analysis::TextTable harness_quality_table(
    const std::vector<std::pair<std::string, std::vector<HarnessScore>>>& by_precision);

}  // namespace crosspoint::sweep
