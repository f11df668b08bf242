// Which precision wins each metric at each concurrency, where the winner flips, and which
// concurrency to measure next to locate a flip. Pure functions over measured cells.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/cell_measurement.h"

namespace crosspoint::analysis {

enum class Metric {
  kMedianTpot,
  kP99Tpot,
  kMedianItl,
  kP99Itl,
  kMedianTtft,
  kP99Ttft,
  kMedianE2el,
  kP99E2el,
  kOutputThroughput,
  kGoodput,
};

// Every metric, in report order.
const std::vector<Metric>& all_metrics();
// "median TPOT", "p99 ITL", "output throughput", ...
std::string_view metric_name(Metric metric);
// "ms", "tok/s", "req/s".
std::string_view metric_unit(Metric metric);
// Latencies: lower wins. Throughput and goodput: higher wins.
bool lower_is_better(Metric metric);
// The metric's value in a cell, or nullopt when the cell did not record it.
std::optional<double> metric_value(const CellMeasurement& cell, Metric metric);
// The metric's confidence interval in a cell (estimate_intervals), or nullopt.
std::optional<Interval> metric_interval(const CellMeasurement& cell, Metric metric);

// The winner of one metric at one concurrency among the precisions that recorded it.
struct LevelWinner {
  double concurrency = 0;
  std::string winner;     // best precision; empty when tie is true
  std::string leader;     // best precision even when tied
  std::string runner_up;  // second best
  double best_value = 0;
  double runner_up_value = 0;
  double margin = 0;  // relative advantage of the best over the runner-up (0.24 = 24 %)
  bool tie = false;   // no clear winner: within the tolerance, or not separable
  // The two best cells' intervals, when both were estimated.
  std::optional<Interval> best_interval, runner_up_interval;
  // tie because the two intervals overlap although the margin exceeds the tolerance: "not
  // separable at this sample size" (more requests may decide it).
  bool not_separable = false;
  // Either of the two best cells was measured under interference (busy-machine guard).
  bool interfered = false;
  // Every precision the sample cannot put behind the leader (the leader first, then in order of
  // value): within the tolerance of it, or with an interval that overlaps the leader's. The
  // others were measured separably worse.
  std::vector<std::string> contenders;
  std::vector<std::string> ranked;  // every precision measured at this level, best first
};

// For every concurrency where at least two precisions recorded the metric, in increasing
// concurrency. A margin at or below tie_tolerance (relative, 0.02 = 2 %) is a tie; so is a
// level where both best cells carry intervals and those overlap (not_separable): a winner is
// named only when the two best are apart by more than the tolerance and their intervals are
// disjoint. Crossovers (below) are therefore only stated between separable levels.
std::vector<LevelWinner> winners_by_concurrency(const std::vector<CellMeasurement>& cells, Metric metric,
                                                double tie_tolerance = 0);

// A change of clear winner between two measured concurrencies (ties in between skipped):
// the flip lies in (concurrency_below, concurrency_above].
struct Crossover {
  Metric metric = Metric::kMedianTpot;
  double concurrency_below = 0;  // last level won by winner_below
  double concurrency_above = 0;  // first level won by winner_above
  std::string winner_below;
  std::string winner_above;
};

std::vector<Crossover> find_crossovers(const std::vector<CellMeasurement>& cells, Metric metric,
                                       double tie_tolerance = 0);

// The lowest measured concurrency at which `leader` stops clearly winning the metric (it
// loses, or its margin falls to a tie). nullopt when it leads everywhere it was measured.
// "The tail crosses first": this is lower for p99 ITL/TPOT than for median TPOT.
std::optional<double> first_concurrency_lead_lost(const std::vector<CellMeasurement>& cells, Metric metric,
                                                  const std::string& leader, double tie_tolerance);

// Bisection of a bracket [lower, upper] of concurrency levels (lower won by one precision,
// upper by another). Concurrency effects are roughly logarithmic, so the probe is the
// geometric midpoint, rounded to an integer strictly inside the bracket.
struct BisectionStep {
  bool done = false;            // upper - lower <= resolution: the flip is located
  double next_concurrency = 0;  // the level to measure next when !done
};
BisectionStep next_bisection_probe(double lower, double upper, double resolution);

// The next concurrency to run for each crossover of the metric that is not yet located to
// `resolution` (sorted, without duplicates).
std::vector<double> plan_crossover_probes(const std::vector<CellMeasurement>& cells, Metric metric, double resolution,
                                          double tie_tolerance = 0);

}  // namespace crosspoint::analysis
