#include "analysis/cell_measurement.h"

#include <fstream>
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
      {"output_throughput", &cell.output_throughput_tok_s},
      {"request_goodput", &cell.request_goodput_req_s},
      {"request_goodput:", &cell.request_goodput_req_s},
      {"mean_running_batch", &cell.mean_running_batch},
      {"steady_mean_running", &cell.steady_running_batch},
      {"peak_running_batch", &cell.peak_running_batch},
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
  return cell;
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
