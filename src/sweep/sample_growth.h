// How many more runs a sweep measures, and where, so that its intervals separate the
// precisions it compares within the time it was given (--time-budget). A pure function of the
// cells measured so far: it finds every level where the two best precisions of a deciding
// metric differ by more than the tie tolerance but their intervals overlap ("not separable at
// this sample size"), prices one more run of both cells from their measured run times, and
// picks the cheapest comparisons that fit in the time left.
#pragma once

#include <string>
#include <vector>

#include "analysis/cell_measurement.h"
#include "analysis/crossover.h"

namespace crosspoint::sweep {

// The metrics whose separability drives the sample size: the recommendation's latency and
// throughput lines (p99s need far more requests than a demo has; they are reported with their
// intervals and called not separable where they overlap, but do not spend the budget).
const std::vector<analysis::Metric>& deciding_metrics();

// One level of one metric whose two best precisions cannot be told apart yet.
struct UndecidedComparison {
  analysis::Metric metric = analysis::Metric::kMedianTpot;
  double concurrency = 0;
  std::string leader;
  std::string runner_up;
};

struct CellToGrow {
  std::string precision;
  int concurrency = 0;
};

struct SampleGrowthInput {
  std::vector<analysis::CellMeasurement> cells;  // merged runs with intervals (analysis::estimate_intervals)
  double tie_tolerance = 0.02;
  double remaining_s = 0;      // budget left
  double server_start_s = 10;  // cost of (re)starting one precision's server
  int max_runs_per_cell = 8;   // a cell with this many runs is not grown further
};

struct SampleGrowthPlan {
  std::vector<UndecidedComparison> undecided;  // every not-separable comparison now
  std::vector<CellToGrow> cells;               // one more run each, in this round (sorted, unique)
  double estimated_s = 0;                      // what the round is expected to take
  // Undecided comparisons remain that this round does not address because the time left is
  // too small for them.
  bool budget_too_small = false;
  // Undecided comparisons remain whose cells have reached max_runs_per_cell.
  bool runs_capped = false;
};

// The cost of one more run of a cell: its mean wall time per run (the guard's records when
// present, else the bench duration) plus 20 % for the warm-up and the client's start.
double run_cost_s(const analysis::CellMeasurement& cell);

SampleGrowthPlan plan_sample_growth(const SampleGrowthInput& input);

// Every comparison of the deciding metrics that is not separable, in metric then concurrency order.
std::vector<UndecidedComparison> undecided_comparisons(const std::vector<analysis::CellMeasurement>& cells,
                                                       double tie_tolerance);

}  // namespace crosspoint::sweep
