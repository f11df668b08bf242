// The whole analysis of a study in one call: the roofline of every cell, the winners and
// crossovers of every metric, the next concurrencies to measure, and the capacity of every
// precision. `crosspoint roofline` prints it; the report renders it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "analysis/bootstrap.h"
#include "analysis/capacity.h"
#include "analysis/crossover.h"
#include "analysis/decode_cost.h"
#include "analysis/interference.h"
#include "analysis/hardware_table.h"
#include "analysis/headline.h"
#include "analysis/model_shape.h"
#include "analysis/roofline.h"
#include "analysis/slo.h"
#include "analysis/study_results.h"

namespace crosspoint::analysis {

struct AnalysisOptions {
  HardwareCeilings hardware;              // ceilings to measure against
  std::optional<ModelShape> model_shape;  // from --config: exact streamed bytes per precision
  double model_num_params = 0;            // else: parameters (overrides the study's)
  double kv_bytes_per_element = 2;        // fp16/bf16 KV cache
  double tie_tolerance = 0.02;            // relative margin below which a metric is a tie
  double bisection_resolution = 4;        // concurrency levels
  int64_t kv_block_size = 1;              // paged-KV block for the capacity planner (1: no rounding, as the study)
  BootstrapOptions bootstrap;             // the intervals (fixed seed: reproducible reports)
  InterferenceThresholds interference;    // the busy-machine guard's thresholds
  // The SLO for capacity and goodput; unset: default_slo() (named as the default in the report).
  std::optional<ServiceLevelObjective> slo;
};

struct MetricAnalysis {
  Metric metric = Metric::kMedianTpot;
  std::vector<LevelWinner> winners;  // per concurrency
  std::vector<Crossover> crossovers;
  std::vector<double> next_probes;  // concurrencies to measure next
};

struct PrecisionCapacity {
  std::string precision;
  CapacityPlan plan;
};

struct StudyAnalysis {
  HardwareCeilings hardware;
  // The study's cells with repeated runs merged and intervals and interference verdicts
  // estimated (merge_repeated_runs, estimate_intervals); everything below is computed on these.
  std::vector<CellMeasurement> cells;
  BootstrapOptions bootstrap;                  // how the intervals were estimated
  std::vector<std::string> cost_descriptions;  // one per precision: how its bytes were counted
  std::vector<RooflineCell> roofline;          // one per cell, in input order
  std::vector<MetricAnalysis> metrics;         // metrics with at least one compared level
  std::string low_load_leader;                 // median-TPOT winner at the lowest concurrency
  // first concurrency where low_load_leader stops clearly winning, per metric (the tail test)
  std::vector<std::pair<Metric, std::optional<double>>> lead_lost_at;
  std::vector<PrecisionCapacity> capacity;
  double tie_tolerance = 0.02;  // the one the winners were named with
  // The headline's metrics compared across weight precisions (headline.h): median TPOT, p99
  // TPOT, output throughput and goodput within the SLO, those the cells recorded.
  std::vector<HeadlineMetric> headline;
  // When some label is split over ranks (tensor_parallel_size > 1): output throughput per
  // device, each cell's throughput and its interval divided by its label's rank count.
  std::optional<HeadlineMetric> throughput_per_device;
  SloAnalysis slo;  // capacity under the SLO; cells' goodput is the SLO's where requests were kept
};

// Fails (naming the cell) when a cell's precision label cannot be parsed and has no setup,
// or when neither a model shape nor a parameter count is known.
Result<StudyAnalysis> analyze_study(const StudyResults& study, const AnalysisOptions& options);

nlohmann::json study_analysis_to_json(const StudyAnalysis& analysis);

// {"estimate": e, "lower": l, "upper": u}.
nlohmann::json interval_to_json(const Interval& interval);
// Every estimated interval of a cell ({"median_tpot_ms": {...}, ...}), its runs, requests and
// interference verdict: what study.json and the analysis JSON carry per cell.
nlohmann::json cell_intervals_to_json(const CellMeasurement& cell);

}  // namespace crosspoint::analysis
