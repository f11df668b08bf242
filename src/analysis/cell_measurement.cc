#include "analysis/cell_measurement.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

namespace crosspoint::analysis {

namespace {

// Looks key up at the top level, then under "server" / "server_metrics" (where a bench
// client may group what it sampled from the server's /metrics).
const nlohmann::json* find_key(const nlohmann::json& result, const char* key) {
  auto it = result.find(key);
  if (it != result.end() && !it->is_null()) return &*it;
  for (const char* group : {"server", "server_metrics", "metadata"}) {
    auto g = result.find(group);
    if (g == result.end() || !g->is_object()) continue;
    auto inner = g->find(key);
    if (inner != g->end() && !inner->is_null()) return &*inner;
  }
  return nullptr;
}

Status read_number(const nlohmann::json& result, const char* key, const std::string& source,
                   std::optional<double>* out) {
  const nlohmann::json* value = find_key(result, key);
  if (value == nullptr) return Status::ok();
  if (value->is_number()) {
    *out = value->get<double>();
    return Status::ok();
  }
  // vLLM writes request_rate as the string "inf"; numbers as strings are accepted likewise.
  if (value->is_string()) {
    try {
      *out = std::stod(value->get<std::string>());
      return Status::ok();
    } catch (const std::exception&) {}
  }
  return invalid_argument(source + ": key '" + key + "' must be a number");
}

Status read_int_list(const nlohmann::json& result, const char* key, const std::string& source,
                     std::vector<int64_t>* out) {
  const nlohmann::json* value = find_key(result, key);
  if (value == nullptr) return Status::ok();
  if (!value->is_array()) return invalid_argument(source + ": key '" + key + "' must be a list of integers");
  for (const auto& item : *value) {
    if (!item.is_number()) return invalid_argument(source + ": key '" + key + "' must be a list of integers");
    out->push_back(static_cast<int64_t>(item.get<double>()));
  }
  return Status::ok();
}

// The per-request lists of a detailed result (seconds) as milliseconds, successful requests
// only (an "errors" entry that is a non-empty string, or no output, marks a failure).
Status read_requests(const nlohmann::json& result, const std::string& source, CellMeasurement* cell) {
  auto ttfts = result.find("ttfts");
  auto latencies = result.find("latencies");
  auto outputs = result.find("output_lens");
  if (ttfts == result.end() || latencies == result.end() || outputs == result.end()) return Status::ok();
  if (!ttfts->is_array() || !latencies->is_array() || !outputs->is_array()) return Status::ok();
  const size_t n = ttfts->size();
  if (latencies->size() != n || outputs->size() != n) {
    return invalid_argument(source + ": 'ttfts', 'latencies' and 'output_lens' differ in length");
  }
  auto itls = result.find("itls");
  const bool have_itls = itls != result.end() && itls->is_array() && itls->size() == n;
  auto errors = result.find("errors");
  const bool have_errors = errors != result.end() && errors->is_array() && errors->size() == n;
  for (size_t i = 0; i < n; ++i) {
    const auto& t = (*ttfts)[i];
    const auto& l = (*latencies)[i];
    const auto& o = (*outputs)[i];
    if (!t.is_number() || !l.is_number() || !o.is_number())
      return invalid_argument(source + ": per-request lists must hold numbers (request " + std::to_string(i) + ")");
    if (have_errors && (*errors)[i].is_string() && !(*errors)[i].get<std::string>().empty()) continue;
    const double output = o.get<double>();
    if (output <= 0) continue;
    const double ttft_ms = t.get<double>() * 1000.0;
    const double e2el_ms = l.get<double>() * 1000.0;
    cell->request_ttft_ms.push_back(ttft_ms);
    cell->request_e2el_ms.push_back(e2el_ms);
    cell->request_output_tokens.push_back(output);
    if (output > 1) cell->request_tpot_ms.push_back((e2el_ms - ttft_ms) / (output - 1));
    std::vector<double> gaps;
    if (have_itls && (*itls)[i].is_array()) {
      for (const auto& gap : (*itls)[i]) {
        if (!gap.is_number()) return invalid_argument(source + ": 'itls' must hold lists of numbers");
        gaps.push_back(gap.get<double>() * 1000.0);
      }
    }
    cell->request_itl_ms.push_back(std::move(gaps));
  }
  return Status::ok();
}

std::string precision_from(const nlohmann::json& result) {
  for (const char* key : {"precision", "label", "model_id"}) {
    const nlohmann::json* value = find_key(result, key);
    if (value != nullptr && value->is_string() && !value->get<std::string>().empty()) return value->get<std::string>();
  }
  return "";
}

}  // namespace

Result<CellMeasurement> parse_cell_measurement(const nlohmann::json& result, const std::string& source,
                                               const std::string& precision_label) {
  if (!result.is_object()) return invalid_argument(source + ": a result must be a JSON object");
  CellMeasurement cell;
  cell.precision = precision_label.empty() ? precision_from(result) : precision_label;
  if (cell.precision.empty())
    return invalid_argument(source + ": no precision label (give one, or a 'precision' or 'label' key)");

  std::optional<double> number;
  CROSSPOINT_RETURN_IF_ERROR(read_number(result, "max_concurrency", source, &number));
  if (!number) CROSSPOINT_RETURN_IF_ERROR(read_number(result, "concurrency", source, &number));
  cell.concurrency = number.value_or(0);
  if (cell.concurrency < 0) return invalid_argument(source + ": max_concurrency must not be negative");
  number.reset();
  CROSSPOINT_RETURN_IF_ERROR(read_number(result, "completed", source, &number));
  cell.num_completed = static_cast<int64_t>(number.value_or(0));
  number.reset();
  CROSSPOINT_RETURN_IF_ERROR(read_number(result, "failed", source, &number));
  cell.num_failed = static_cast<int64_t>(number.value_or(0));
  number.reset();
  CROSSPOINT_RETURN_IF_ERROR(read_number(result, "duration", source, &number));
  cell.duration_s = number.value_or(0);

  struct Field {
    const char* key;
    std::optional<double>* out;
  };
  const Field fields[] = {
      {"mean_tpot_ms", &cell.mean_tpot_ms},
      {"median_tpot_ms", &cell.median_tpot_ms},
      {"p99_tpot_ms", &cell.p99_tpot_ms},
      {"mean_itl_ms", &cell.mean_itl_ms},
      {"median_itl_ms", &cell.median_itl_ms},
      {"p99_itl_ms", &cell.p99_itl_ms},
      {"mean_ttft_ms", &cell.mean_ttft_ms},
      {"median_ttft_ms", &cell.median_ttft_ms},
      {"p99_ttft_ms", &cell.p99_ttft_ms},
      {"median_e2el_ms", &cell.median_e2el_ms},
      {"p99_e2el_ms", &cell.p99_e2el_ms},
      {"output_throughput", &cell.output_throughput_tok_s},
      {"request_goodput", &cell.request_goodput_req_s},
      {"request_goodput:", &cell.request_goodput_req_s},
      {"mean_running_batch", &cell.mean_running_batch},
      {"steady_mean_running", &cell.steady_running_batch},
      {"mean_running_while_busy", &cell.busy_running_batch},
      {"peak_running_batch", &cell.peak_running_batch},
      {"mean_kv_cache_usage", &cell.mean_kv_cache_usage},
      {"max_kv_cache_usage", &cell.max_kv_cache_usage},
      {"prefix_cache_hit_rate", &cell.prefix_cache_hit_rate},
      {"mean_context_tokens", &cell.mean_context_tokens},
      {"kv_cache_tokens", &cell.kv_cache_tokens},
      {"max_model_len", &cell.max_model_len},
      {"weight_bytes_loaded", &cell.weight_bytes_loaded},
  };
  for (const Field& field : fields) CROSSPOINT_RETURN_IF_ERROR(read_number(result, field.key, source, field.out));
  // crosspoint bench writes its /metrics summary as server_metrics.mean_running / max_running.
  if (!cell.mean_running_batch)
    CROSSPOINT_RETURN_IF_ERROR(read_number(result, "mean_running", source, &cell.mean_running_batch));
  if (!cell.peak_running_batch)
    CROSSPOINT_RETURN_IF_ERROR(read_number(result, "max_running", source, &cell.peak_running_batch));
  number.reset();
  CROSSPOINT_RETURN_IF_ERROR(read_number(result, "num_preemptions", source, &number));
  if (number) cell.num_preemptions = static_cast<int64_t>(*number);
  CROSSPOINT_RETURN_IF_ERROR(read_int_list(result, "input_lens", source, &cell.input_lens));
  CROSSPOINT_RETURN_IF_ERROR(read_int_list(result, "output_lens", source, &cell.output_lens));
  CROSSPOINT_RETURN_IF_ERROR(read_requests(result, source, &cell));
  if (cell.output_throughput_tok_s) cell.run_output_throughputs = {*cell.output_throughput_tok_s};
  if (auto it = result.find("machine"); it != result.end() && !it->is_null()) {
    CROSSPOINT_ASSIGN_OR_RETURN(InterferenceRecord record, interference_record_from_json(*it, source));
    cell.machine.push_back(record);
  }
  return cell;
}

namespace {

// Mean of the values present; nullopt when none is.
std::optional<double> mean_of_present(const std::vector<std::optional<double>>& values) {
  double sum = 0;
  int n = 0;
  for (const auto& v : values) {
    if (!v) continue;
    sum += *v;
    ++n;
  }
  if (n == 0) return std::nullopt;
  return sum / n;
}

std::optional<double> max_of_present(const std::vector<std::optional<double>>& values) {
  std::optional<double> out;
  for (const auto& v : values) {
    if (v) out = std::max(out.value_or(*v), *v);
  }
  return out;
}

CellMeasurement merge_group(const std::vector<const CellMeasurement*>& runs) {
  CellMeasurement out = *runs.front();
  if (runs.size() == 1) return out;
  out.num_runs = 0;
  out.num_completed = out.num_failed = 0;
  out.duration_s = 0;
  out.input_lens.clear();
  out.output_lens.clear();
  out.request_ttft_ms.clear();
  out.request_tpot_ms.clear();
  out.request_e2el_ms.clear();
  out.request_itl_ms.clear();
  out.request_output_tokens.clear();
  out.run_output_throughputs.clear();
  out.machine.clear();
  std::optional<int64_t> preemptions;
  auto collect = [&](std::optional<double> CellMeasurement::*field) {
    std::vector<std::optional<double>> values;
    for (const CellMeasurement* run : runs) values.push_back(run->*field);
    return values;
  };
  for (const CellMeasurement* run : runs) {
    out.num_runs += run->num_runs;
    out.num_completed += run->num_completed;
    out.num_failed += run->num_failed;
    out.duration_s += run->duration_s;
    out.input_lens.insert(out.input_lens.end(), run->input_lens.begin(), run->input_lens.end());
    out.output_lens.insert(out.output_lens.end(), run->output_lens.begin(), run->output_lens.end());
    out.request_ttft_ms.insert(out.request_ttft_ms.end(), run->request_ttft_ms.begin(), run->request_ttft_ms.end());
    out.request_tpot_ms.insert(out.request_tpot_ms.end(), run->request_tpot_ms.begin(), run->request_tpot_ms.end());
    out.request_e2el_ms.insert(out.request_e2el_ms.end(), run->request_e2el_ms.begin(), run->request_e2el_ms.end());
    out.request_itl_ms.insert(out.request_itl_ms.end(), run->request_itl_ms.begin(), run->request_itl_ms.end());
    out.request_output_tokens.insert(out.request_output_tokens.end(), run->request_output_tokens.begin(),
                                     run->request_output_tokens.end());
    out.run_output_throughputs.insert(out.run_output_throughputs.end(), run->run_output_throughputs.begin(),
                                      run->run_output_throughputs.end());
    out.machine.insert(out.machine.end(), run->machine.begin(), run->machine.end());
    if (run->num_preemptions) preemptions = preemptions.value_or(0) + *run->num_preemptions;
  }
  out.num_preemptions = preemptions;
  for (auto field :
       {&CellMeasurement::mean_tpot_ms, &CellMeasurement::mean_itl_ms, &CellMeasurement::mean_ttft_ms,
        &CellMeasurement::median_tpot_ms, &CellMeasurement::p99_tpot_ms, &CellMeasurement::median_itl_ms,
        &CellMeasurement::p99_itl_ms, &CellMeasurement::median_ttft_ms, &CellMeasurement::p99_ttft_ms,
        &CellMeasurement::median_e2el_ms, &CellMeasurement::p99_e2el_ms, &CellMeasurement::output_throughput_tok_s,
        &CellMeasurement::request_goodput_req_s, &CellMeasurement::mean_running_batch,
        &CellMeasurement::busy_running_batch, &CellMeasurement::mean_context_tokens,
        &CellMeasurement::mean_kv_cache_usage, &CellMeasurement::prefix_cache_hit_rate}) {
    out.*field = mean_of_present(collect(field));
  }
  out.peak_running_batch = max_of_present(collect(&CellMeasurement::peak_running_batch));
  out.max_kv_cache_usage = max_of_present(collect(&CellMeasurement::max_kv_cache_usage));
  // Percentiles of the pooled requests replace the runs' mean where the lists are there.
  auto pooled = [](std::optional<double>& median, std::optional<double>& p99, const std::vector<double>& values) {
    if (values.empty()) return;
    median = linear_percentile(values, 50);
    p99 = linear_percentile(values, 99);
  };
  pooled(out.median_tpot_ms, out.p99_tpot_ms, out.request_tpot_ms);
  pooled(out.median_ttft_ms, out.p99_ttft_ms, out.request_ttft_ms);
  pooled(out.median_e2el_ms, out.p99_e2el_ms, out.request_e2el_ms);
  std::vector<double> itls;
  for (const auto& gaps : out.request_itl_ms) itls.insert(itls.end(), gaps.begin(), gaps.end());
  pooled(out.median_itl_ms, out.p99_itl_ms, itls);
  return out;
}

}  // namespace

std::vector<CellMeasurement> merge_repeated_runs(const std::vector<CellMeasurement>& runs) {
  std::vector<std::pair<std::pair<std::string, double>, std::vector<const CellMeasurement*>>> groups;
  for (const CellMeasurement& run : runs) {
    const std::pair<std::string, double> key{run.precision, run.concurrency};
    auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == key; });
    if (it == groups.end()) {
      groups.push_back({key, {&run}});
    } else {
      it->second.push_back(&run);
    }
  }
  std::vector<CellMeasurement> out;
  out.reserve(groups.size());
  for (const auto& [key, members] : groups) out.push_back(merge_group(members));
  return out;
}

void estimate_intervals(CellMeasurement& cell, const BootstrapOptions& options,
                        const InterferenceThresholds& thresholds) {
  const std::vector<double> ps = {50, 99};
  auto fill = [&](const std::vector<double>& values, std::optional<Interval>& median, std::optional<Interval>& p99) {
    if (values.empty()) return;
    const std::vector<Interval> intervals = bootstrap_percentiles(values, ps, options);
    median = intervals[0];
    p99 = intervals[1];
  };
  fill(cell.request_tpot_ms, cell.median_tpot_ci, cell.p99_tpot_ci);
  fill(cell.request_ttft_ms, cell.median_ttft_ci, cell.p99_ttft_ci);
  fill(cell.request_e2el_ms, cell.median_e2el_ci, cell.p99_e2el_ci);
  bool any_itl = false;
  for (const auto& gaps : cell.request_itl_ms) any_itl = any_itl || !gaps.empty();
  if (any_itl) {
    const std::vector<Interval> intervals = bootstrap_percentiles(cell.request_itl_ms, ps, options);
    cell.median_itl_ci = intervals[0];
    cell.p99_itl_ci = intervals[1];
  }
  if (cell.run_output_throughputs.size() >= kMinRunsForRunInterval) {
    cell.output_throughput_ci = t_interval(cell.run_output_throughputs, options.confidence);
    // A few noisy runs can put the t interval's lower end below zero; a throughput cannot be.
    cell.output_throughput_ci->lower = std::max(cell.output_throughput_ci->lower, 0.0);
  } else if (cell.output_throughput_tok_s && !cell.request_e2el_ms.empty()) {
    cell.output_throughput_ci = bootstrap_ratio_interval(cell.request_output_tokens, cell.request_e2el_ms,
                                                         *cell.output_throughput_tok_s, options);
  }
  cell.interfered = false;
  cell.interference_reason.clear();
  for (size_t i = 0; i < cell.machine.size(); ++i) {
    const InterferenceVerdict verdict = classify_interference(cell.machine[i], thresholds);
    if (!verdict.interfered) continue;
    cell.interfered = true;
    cell.interference_reason += (cell.interference_reason.empty() ? "" : "; ") +
                                (cell.machine.size() > 1 ? "run " + std::to_string(i + 1) + ": " : "") + verdict.reason;
  }
}

Result<std::vector<CellMeasurement>> load_cell_measurements(const std::string& path,
                                                            const std::string& precision_label) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return not_found(path + ": cannot open");
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();
  std::vector<nlohmann::json> objects;
  try {
    nlohmann::json whole = nlohmann::json::parse(text);
    if (whole.is_array()) {
      for (auto& item : whole) objects.push_back(item);
    } else {
      objects.push_back(whole);
    }
  } catch (const nlohmann::json::exception&) {
    // Not one document: try JSON lines.
    std::istringstream lines(text);
    std::string line;
    int line_number = 0;
    while (std::getline(lines, line)) {
      ++line_number;
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      try {
        objects.push_back(nlohmann::json::parse(line));
      } catch (const nlohmann::json::exception& e) {
        return corrupt(path + ":" + std::to_string(line_number) + ": not valid JSON: " + e.what());
      }
    }
  }
  if (objects.empty()) return corrupt(path + ": no result objects");
  std::vector<CellMeasurement> cells;
  for (size_t i = 0; i < objects.size(); ++i) {
    const std::string source = objects.size() == 1 ? path : path + "[" + std::to_string(i) + "]";
    CROSSPOINT_ASSIGN_OR_RETURN(CellMeasurement cell, parse_cell_measurement(objects[i], source, precision_label));
    cells.push_back(std::move(cell));
  }
  return cells;
}

}  // namespace crosspoint::analysis
