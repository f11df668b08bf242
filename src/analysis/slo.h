// Capacity under a service-level objective: per precision, the most load it carries while a
// percentile of its requests meets the SLO, and the goodput there (vLLM's --goodput: requests
// per second that met every limit). Pure functions over measured cells.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "analysis/cell_measurement.h"
#include "analysis/crossover.h"

namespace crosspoint::analysis {

struct ServiceLevelObjective {
  // Per-request limits in ms (vLLM --goodput ttft:/tpot:/e2el:); a request is good when it
  // meets every one given.
  std::optional<double> ttft_ms, tpot_ms, e2el_ms;
  double percentile = 99;   // a level meets the SLO when this percentile of every limited metric does
  bool is_default = false;  // chosen by the report because none was given
  bool empty() const { return !ttft_ms && !tpot_ms && !e2el_ms; }
};

// The seed study's "goodput under an SLO (e.g. TTFT < 1 s) is the honest metric": p99 TTFT ≤ 1000 ms.
ServiceLevelObjective default_slo();

// "p99 TTFT ≤ 1000 ms and p99 TPOT ≤ 50 ms".
std::string describe_slo(const ServiceLevelObjective& slo);

// Requests per second that met every limit (vLLM: good requests / duration; a one-token reply
// counts as TPOT 0). From the per-request lists; nullopt without them or without a duration.
std::optional<double> slo_goodput(const CellMeasurement& cell, const ServiceLevelObjective& slo);

// The cell's value of a limited metric at the SLO's percentile: the bench's p99 key at 99,
// else computed from the per-request lists; nullopt when neither is there.
std::optional<double> slo_percentile_ms(const CellMeasurement& cell, const ServiceLevelObjective& slo,
                                        Metric median_metric);

// Whether every limited metric's percentile meets its limit; nullopt when one is unknown.
std::optional<bool> meets_slo(const CellMeasurement& cell, const ServiceLevelObjective& slo);

struct SloCapacity {
  std::string label;
  // The highest measured concurrency up to which every measured level met the SLO (levels from
  // the lowest up; a pass above a failure does not count); nullopt when the lowest failed.
  std::optional<double> max_concurrency;
  std::optional<double> goodput_req_s;     // at max_concurrency
  std::optional<double> first_failing;     // the lowest measured level that missed it
  std::optional<double> failing_value_ms;  // the limited metric that missed it there, worst ratio
  std::string failing_metric;              // "p99 TTFT"
  std::vector<double> no_data_levels;      // levels below the first miss without the limited metrics
};

struct SloAnalysis {
  ServiceLevelObjective slo;
  std::vector<SloCapacity> capacity;  // one per label, in order of first appearance
  // The label carrying the most load within the SLO (ties: all named), and the highest level.
  std::vector<std::string> most_load;
  std::optional<double> most_load_concurrency;
};

// Fills each cell's request_goodput_req_s with slo_goodput where per-request lists exist (the
// bench's own figure, computed under --slo, stays where they do not).
void apply_slo_goodput(std::vector<CellMeasurement>& cells, const ServiceLevelObjective& slo);

SloAnalysis analyze_slo(const std::vector<CellMeasurement>& cells, const ServiceLevelObjective& slo);

}  // namespace crosspoint::analysis
