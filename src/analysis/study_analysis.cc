#include "analysis/study_analysis.h"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace crosspoint::analysis {

namespace {

Result<Precision> precision_of(const StudyResults& study, const CellMeasurement& cell) {
  if (const PrecisionSetup* setup = study.find_precision(cell.precision)) return setup->precision;
  auto parsed = parse_precision(cell.precision);
  if (!parsed.is_ok())
    return invalid_argument("cell '" + cell.precision + "' at concurrency " + std::to_string(cell.concurrency) + ": " +
                            parsed.status().message());
  return parsed;
}

Result<DecodeCost> cost_of(const StudyResults& study, const CellMeasurement& cell, Precision precision,
                           const AnalysisOptions& options) {
  const PrecisionSetup* setup = study.find_precision(cell.precision);
  const int ranks = setup != nullptr ? setup->tensor_parallel_size : 1;
  if (options.model_shape) {
    const double kv_bytes = setup != nullptr && setup->kv_bytes_per_element > 0 ? setup->kv_bytes_per_element
                                                                                : options.kv_bytes_per_element;
    return split_decode_cost(decode_cost_from_shape(*options.model_shape, precision, kv_bytes), &*options.model_shape,
                             ranks);
  }
  const double num_params = options.model_num_params > 0 ? options.model_num_params : study.model_num_params;
  if (num_params <= 0)
    return invalid_argument("no model size: give a config.json (--config) or a parameter count (--model-params)");
  double weight_bytes = setup != nullptr ? setup->weight_bytes : 0;
  if (weight_bytes <= 0 && cell.weight_bytes_loaded) weight_bytes = *cell.weight_bytes_loaded;
  return split_decode_cost(decode_cost_from_params(num_params, precision, weight_bytes), nullptr, ranks);
}

CapacityInput capacity_input(const StudyResults& study, const std::vector<CellMeasurement>& cells,
                             const std::string& label, const AnalysisOptions& options) {
  CapacityInput input;
  input.block_size = options.kv_block_size;
  input.max_model_len = study.max_model_len;
  input.mean_request_tokens = study.mean_input_tokens + study.mean_output_tokens;
  if (const PrecisionSetup* setup = study.find_precision(label)) input.kv_cache_tokens = setup->kv_cache_tokens;
  // The run at the highest concurrency is the one that tests capacity.
  const CellMeasurement* busiest = nullptr;
  for (const CellMeasurement& cell : cells) {
    if (cell.precision != label) continue;
    if (input.kv_cache_tokens <= 0 && cell.kv_cache_tokens) input.kv_cache_tokens = *cell.kv_cache_tokens;
    if (input.max_model_len <= 0 && cell.max_model_len) input.max_model_len = *cell.max_model_len;
    if (busiest == nullptr || cell.concurrency > busiest->concurrency) busiest = &cell;
  }
  if (busiest != nullptr) {
    input.observed_peak_running_batch = busiest->peak_running_batch;
    input.observed_mean_running_batch = busiest->mean_running_batch;
    input.num_preemptions = busiest->num_preemptions;
    if (busiest->concurrency > 0) input.concurrency_cap = busiest->concurrency;
    for (size_t i = 0; i < busiest->input_lens.size() && i < busiest->output_lens.size(); ++i)
      input.request_tokens.push_back(busiest->input_lens[i] + busiest->output_lens[i]);
  }
  return input;
}

}  // namespace

Result<StudyAnalysis> analyze_study(const StudyResults& study, const AnalysisOptions& options) {
  StudyAnalysis out;
  out.hardware = options.hardware;
  out.bootstrap = options.bootstrap;
  out.cells = merge_repeated_runs(study.cells);
  for (CellMeasurement& cell : out.cells) estimate_intervals(cell, options.bootstrap, options.interference);
  out.tie_tolerance = options.tie_tolerance;
  const ServiceLevelObjective slo = options.slo && !options.slo->empty() ? *options.slo : default_slo();
  apply_slo_goodput(out.cells, slo);
  // Attention's bytes need the running sequences' context; a bench that did not record it
  // still sampled the KV cache's usage, and usage x capacity / batch is the mean context.
  for (CellMeasurement& cell : out.cells) {
    if (cell.mean_context_tokens || !cell.mean_kv_cache_usage || !cell.mean_running_batch ||
        *cell.mean_running_batch <= 0)
      continue;
    const PrecisionSetup* setup = study.find_precision(cell.precision);
    const double kv_tokens =
        setup != nullptr && setup->kv_cache_tokens > 0 ? setup->kv_cache_tokens : cell.kv_cache_tokens.value_or(0);
    if (kv_tokens <= 0) continue;
    cell.mean_context_tokens = *cell.mean_kv_cache_usage * kv_tokens / *cell.mean_running_batch;
    cell.context_from_kv_usage = true;
  }
  const std::vector<CellMeasurement>& cells = out.cells;
  std::vector<std::string> labels;
  for (const CellMeasurement& cell : cells) {
    CROSSPOINT_ASSIGN_OR_RETURN(Precision precision, precision_of(study, cell));
    CROSSPOINT_ASSIGN_OR_RETURN(DecodeCost cost, cost_of(study, cell, precision, options));
    if (std::find(labels.begin(), labels.end(), cell.precision) == labels.end()) {
      labels.push_back(cell.precision);
      out.cost_descriptions.push_back(cell.precision + ": " + cost.description);
    }
    out.roofline.push_back(analyze_cell(cell, precision, cost, options.hardware));
  }
  for (Metric metric : all_metrics()) {
    MetricAnalysis entry;
    entry.metric = metric;
    entry.winners = winners_by_concurrency(cells, metric, options.tie_tolerance);
    if (entry.winners.empty()) continue;
    entry.crossovers = find_crossovers(cells, metric, options.tie_tolerance);
    entry.next_probes = plan_crossover_probes(cells, metric, options.bisection_resolution, options.tie_tolerance);
    out.metrics.push_back(std::move(entry));
  }
  for (const MetricAnalysis& entry : out.metrics) {
    if (entry.metric == Metric::kMedianTpot && !entry.winners.front().tie)
      out.low_load_leader = entry.winners.front().winner;
  }
  if (!out.low_load_leader.empty()) {
    for (const MetricAnalysis& entry : out.metrics) {
      out.lead_lost_at.emplace_back(
          entry.metric, first_concurrency_lead_lost(cells, entry.metric, out.low_load_leader, options.tie_tolerance));
    }
  }
  for (Metric metric : {Metric::kMedianTpot, Metric::kP99Tpot, Metric::kOutputThroughput, Metric::kGoodput}) {
    HeadlineMetric headline = headline_metric(study, cells, metric, options.tie_tolerance);
    if (!headline.winners.empty()) out.headline.push_back(std::move(headline));
  }
  const bool any_split = std::any_of(study.precisions.begin(), study.precisions.end(),
                                     [](const PrecisionSetup& s) { return s.tensor_parallel_size > 1; });
  if (any_split) {
    std::vector<CellMeasurement> per_device = cells;
    for (CellMeasurement& cell : per_device) {
      const PrecisionSetup* setup = study.find_precision(cell.precision);
      const double n = setup != nullptr ? setup->tensor_parallel_size : 1;
      if (cell.output_throughput_tok_s) *cell.output_throughput_tok_s /= n;
      if (cell.output_throughput_ci) {
        cell.output_throughput_ci->estimate /= n;
        cell.output_throughput_ci->lower /= n;
        cell.output_throughput_ci->upper /= n;
      }
    }
    HeadlineMetric headline = headline_metric(study, per_device, Metric::kOutputThroughput, options.tie_tolerance);
    if (!headline.winners.empty()) out.throughput_per_device = std::move(headline);
  }
  out.slo = analyze_slo(cells, slo);
  for (const std::string& label : labels) {
    const CapacityInput input = capacity_input(study, cells, label, options);
    if (input.kv_cache_tokens > 0) out.capacity.push_back({label, plan_capacity(input)});
  }
  return out;
}

nlohmann::json interval_to_json(const Interval& interval) {
  return {{"estimate", interval.estimate}, {"lower", interval.lower}, {"upper", interval.upper}};
}

nlohmann::json cell_intervals_to_json(const CellMeasurement& cell) {
  nlohmann::json intervals = nlohmann::json::object();
  const std::pair<const char*, const std::optional<Interval>*> named[] = {
      {"median_tpot_ms", &cell.median_tpot_ci},         {"p99_tpot_ms", &cell.p99_tpot_ci},
      {"median_itl_ms", &cell.median_itl_ci},           {"p99_itl_ms", &cell.p99_itl_ci},
      {"median_ttft_ms", &cell.median_ttft_ci},         {"p99_ttft_ms", &cell.p99_ttft_ci},
      {"median_e2el_ms", &cell.median_e2el_ci},         {"p99_e2el_ms", &cell.p99_e2el_ci},
      {"output_throughput", &cell.output_throughput_ci}};
  for (const auto& [name, interval] : named) {
    if (*interval) intervals[name] = interval_to_json(**interval);
  }
  nlohmann::json machine = nlohmann::json::array();
  for (const InterferenceRecord& record : cell.machine) machine.push_back(interference_record_to_json(record));
  return {{"precision", cell.precision},
          {"concurrency", cell.concurrency},
          {"num_runs", cell.num_runs},
          {"num_requests", cell.request_e2el_ms.size()},
          {"run_output_throughputs", cell.run_output_throughputs},
          {"intervals", intervals},
          {"interval_method", cell.run_output_throughputs.size() >= kMinRunsForRunInterval
                                  ? "latencies: percentile bootstrap over requests; throughput: t interval over runs"
                                  : "latencies: percentile bootstrap over requests; throughput: request bootstrap "
                                    "of output tokens / latency, scaled to the measured throughput"},
          {"interfered", cell.interfered},
          {"interference_reason", cell.interference_reason},
          {"machine", machine}};
}

nlohmann::json study_analysis_to_json(const StudyAnalysis& analysis) {
  nlohmann::json out;
  out["hardware"] = {
      {"name", analysis.hardware.name},
      {"bandwidth_gb_s", analysis.hardware.bandwidth_gb_s},
      {"fp16_tflops", analysis.hardware.fp16_tflops},
      {"fp8_tflops", analysis.hardware.fp8_tflops},
      {"critical_intensity_fp16", critical_intensity(analysis.hardware.fp16_tflops, analysis.hardware.bandwidth_gb_s)},
      {"source", analysis.hardware.source}};
  out["cost_descriptions"] = analysis.cost_descriptions;
  nlohmann::json cells = nlohmann::json::array();
  for (const RooflineCell& c : analysis.roofline) {
    cells.push_back({{"precision", c.precision},
                     {"concurrency", c.concurrency},
                     {"batch", c.batch},
                     {"batch_measured", c.batch_measured},
                     {"mean_context_tokens", c.mean_context_tokens},
                     {"tensor_parallel_size", c.tensor_parallel_size},
                     {"all_reduce_bytes_per_step", c.all_reduce_bytes_per_step},
                     {"weight_bytes_per_step", c.weight_bytes_per_step},
                     {"kv_bytes_per_step", c.kv_bytes_per_step},
                     {"bytes_per_step", c.bytes_per_step},
                     {"flops_per_token", c.flops_per_token},
                     {"arithmetic_intensity", c.arithmetic_intensity},
                     {"critical_intensity", c.critical_intensity},
                     {"peak_tflops", c.peak_tflops},
                     {"peak_fell_back_to_fp16", c.peak_fell_back_to_fp16},
                     {"bound_tpot_ms", c.bound_tpot_ms},
                     {"memory_bound_tpot_ms", c.memory_bound_tpot_ms},
                     {"compute_bound_tpot_ms", c.compute_bound_tpot_ms},
                     {"compute_bound", c.compute_bound},
                     {"measured_tpot_ms", c.measured_tpot_ms},
                     {"effective_bandwidth_gb_s", c.effective_bandwidth_gb_s},
                     {"bandwidth_utilisation", c.bandwidth_utilisation},
                     {"compute_utilisation", c.compute_utilisation},
                     {"achieved_tflops", c.achieved_tflops},
                     {"overhead_ms", c.overhead_ms}});
  }
  out["roofline"] = cells;
  nlohmann::json intervals = nlohmann::json::array();
  for (const CellMeasurement& cell : analysis.cells) intervals.push_back(cell_intervals_to_json(cell));
  out["cells"] = intervals;
  out["bootstrap"] = {{"method", "percentile bootstrap over requests"},
                      {"seed", analysis.bootstrap.seed},
                      {"resamples", analysis.bootstrap.resamples},
                      {"confidence", analysis.bootstrap.confidence}};
  nlohmann::json metrics = nlohmann::json::array();
  for (const MetricAnalysis& m : analysis.metrics) {
    nlohmann::json winners = nlohmann::json::array();
    for (const LevelWinner& w : m.winners) {
      winners.push_back(
          {{"concurrency", w.concurrency},
           {"winner", w.tie ? nlohmann::json(nullptr) : nlohmann::json(w.winner)},
           {"tie", w.tie},
           {"margin", w.margin},
           {"best_value", w.best_value},
           {"runner_up", w.runner_up},
           {"runner_up_value", w.runner_up_value},
           {"leader", w.leader},
           {"not_separable", w.not_separable},
           {"interfered", w.interfered},
           {"best_interval", w.best_interval ? interval_to_json(*w.best_interval) : nlohmann::json()},
           {"runner_up_interval", w.runner_up_interval ? interval_to_json(*w.runner_up_interval) : nlohmann::json()}});
    }
    nlohmann::json crossovers = nlohmann::json::array();
    for (const Crossover& c : m.crossovers) {
      crossovers.push_back({{"concurrency_below", c.concurrency_below},
                            {"concurrency_above", c.concurrency_above},
                            {"winner_below", c.winner_below},
                            {"winner_above", c.winner_above}});
    }
    metrics.push_back({{"metric", metric_name(m.metric)},
                       {"unit", metric_unit(m.metric)},
                       {"winners", winners},
                       {"crossovers", crossovers},
                       {"next_probes", m.next_probes}});
  }
  out["metrics"] = metrics;
  out["low_load_leader"] = analysis.low_load_leader;
  nlohmann::json lead = nlohmann::json::object();
  for (const auto& [metric, at] : analysis.lead_lost_at)
    lead[std::string(metric_name(metric))] = at ? nlohmann::json(*at) : nlohmann::json(nullptr);
  out["lead_lost_at"] = lead;
  nlohmann::json capacity = nlohmann::json::array();
  for (const PrecisionCapacity& p : analysis.capacity) {
    nlohmann::json percentiles = nlohmann::json::array();
    for (const PercentileCapacity& q : p.plan.percentile_concurrency)
      percentiles.push_back(
          {{"percentile", q.percentile}, {"request_tokens", q.request_tokens}, {"concurrency", q.concurrency}});
    capacity.push_back({{"precision", p.precision},
                        {"worst_case_concurrency", p.plan.worst_case_concurrency},
                        {"mean_request_tokens", p.plan.mean_request_tokens},
                        {"workload_concurrency", p.plan.workload_concurrency},
                        {"percentile_concurrency", percentiles},
                        {"verdict", p.plan.verdict}});
  }
  out["capacity"] = capacity;
  return out;
}

}  // namespace crosspoint::analysis
