// What one way of serving changed, measured side by side in one sweep: each weight precision
// with an fp8 KV cache against the same weights with the device's own cache (the KV axis), and
// with prefix caching on against off (the prefix axis). For every such pair, at each
// concurrency both were measured at: median TTFT, median TPOT and output throughput, with the
// change of each, preemptions and the prefix cache's hit rate; beside them the KV capacity and
// the quality cost. And for each combination of the axes, where the weight precisions'
// crossovers of median TPOT and throughput lie, so the report can say where an axis moved them.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "analysis/cell_measurement.h"
#include "analysis/markdown_table.h"

namespace crosspoint::sweep {

struct AxisPair {
  std::string axis;     // "kv" or "prefix"
  std::string base;     // label without the change: "w4a16", "w4a16+no-prefix-cache"
  std::string variant;  // with it: "w4a16+kv-fp8", "w4a16+prefix-cache"
};
// Every pair of labels that differ in exactly one axis, in label order: (p, p+kv-fp8) with the
// same caching; (p+no-prefix-cache, p+prefix-cache) with the same KV cache.
std::vector<AxisPair> axis_pairs(const std::vector<std::string>& labels);

struct AxisEffectsInputs {
  std::vector<std::string> labels;                     // served labels, the sweep's order
  std::vector<analysis::CellMeasurement> cells;        // repeated runs merged
  std::map<std::string, double> kv_cache_tokens;       // label -> KV capacity at start-up
  std::map<std::string, double> perplexity_delta_pct;  // quality label -> perplexity change against fp16, %
  double tie_tolerance = 0.02;                         // the report's own
};

struct AxisEffectPart {
  std::string title;               // "fp8 KV cache: w4a16+kv-fp8 against w4a16"
  std::vector<std::string> facts;  // capacity and quality, in sentences
  analysis::TextTable table;       // one row per concurrency both were measured at
};

struct AxisEffects {
  std::vector<AxisEffectPart> parts;
  // One sentence per combination of the axes with two or more weight precisions, when the sweep
  // has more than one such combination: the crossovers found among its precisions.
  std::vector<std::string> crossover_lines;
  bool empty() const { return parts.empty(); }
};
AxisEffects axis_effects(const AxisEffectsInputs& in);

}  // namespace crosspoint::sweep
