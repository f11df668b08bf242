#include "analysis/study_results.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace crosspoint::analysis {

const PrecisionSetup* StudyResults::find_precision(const std::string& label) const {
  for (const PrecisionSetup& setup : precisions) {
    if (setup.label == label) return &setup;
  }
  return nullptr;
}

namespace {

constexpr double kBytesPerGib = 1024.0 * 1024.0 * 1024.0;

Result<double> optional_number(const nlohmann::json& object, const char* key, const std::string& where) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return 0.0;
  if (!it->is_number()) return invalid_argument(where + ": field '" + key + "' must be a number");
  return it->get<double>();
}

std::string optional_string(const nlohmann::json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

Result<PrecisionSetup> parse_setup(const nlohmann::json& object, const std::string& where) {
  if (!object.is_object()) return invalid_argument(where + ": must be an object");
  PrecisionSetup setup;
  setup.label = optional_string(object, "label");
  if (setup.label.empty()) return invalid_argument(where + ": missing field 'label'");
  const std::string precision_text = optional_string(object, "precision");
  CROSSPOINT_ASSIGN_OR_RETURN(setup.precision, parse_precision(precision_text.empty() ? setup.label : precision_text));
  CROSSPOINT_ASSIGN_OR_RETURN(setup.weight_bytes, optional_number(object, "weight_bytes", where));
  CROSSPOINT_ASSIGN_OR_RETURN(double weights_gib, optional_number(object, "weights_gib", where));
  if (setup.weight_bytes == 0) setup.weight_bytes = weights_gib * kBytesPerGib;
  CROSSPOINT_ASSIGN_OR_RETURN(setup.kv_cache_tokens, optional_number(object, "kv_cache_tokens", where));
  CROSSPOINT_ASSIGN_OR_RETURN(double kv_gib, optional_number(object, "kv_cache_gib", where));
  setup.kv_cache_bytes = kv_gib * kBytesPerGib;
  CROSSPOINT_ASSIGN_OR_RETURN(setup.engine_init_s, optional_number(object, "engine_init_s", where));
  CROSSPOINT_ASSIGN_OR_RETURN(setup.kv_bytes_per_element, optional_number(object, "kv_bytes_per_element", where));
  CROSSPOINT_ASSIGN_OR_RETURN(double ranks, optional_number(object, "tensor_parallel_size", where));
  if (ranks != 0 && (ranks < 1 || ranks != static_cast<int>(ranks) || ranks > 1024))
    return invalid_argument(where + ": 'tensor_parallel_size' must be a whole number of ranks from 1");
  setup.tensor_parallel_size = ranks == 0 ? 1 : static_cast<int>(ranks);
  return setup;
}

}  // namespace

Result<StudyResults> parse_study_results(const std::string& json_text, const std::string& source) {
  nlohmann::json root;
  try {
    root = nlohmann::json::parse(json_text);
  } catch (const nlohmann::json::exception& e) { return corrupt(source + ": not valid JSON: " + e.what()); }
  if (!root.is_object()) return corrupt(source + ": expected a JSON object");
  StudyResults study;
  study.title = optional_string(root, "title");
  study.source = optional_string(root, "source");
  study.hardware_name = optional_string(root, "hardware");
  study.memory_budget = optional_string(root, "memory_budget");
  if (root.contains("model")) {
    const nlohmann::json& model = root["model"];
    if (!model.is_object()) return invalid_argument(source + ": field 'model' must be an object");
    study.model_name = optional_string(model, "name");
    CROSSPOINT_ASSIGN_OR_RETURN(study.model_num_params, optional_number(model, "num_params", source + ": model"));
  }
  CROSSPOINT_ASSIGN_OR_RETURN(study.max_model_len, optional_number(root, "max_model_len", source));
  CROSSPOINT_ASSIGN_OR_RETURN(study.max_num_seqs, optional_number(root, "max_num_seqs", source));
  if (root.contains("workload")) {
    const nlohmann::json& workload = root["workload"];
    if (!workload.is_object()) return invalid_argument(source + ": field 'workload' must be an object");
    CROSSPOINT_ASSIGN_OR_RETURN(study.mean_input_tokens,
                                optional_number(workload, "mean_input_tokens", source + ": workload"));
    CROSSPOINT_ASSIGN_OR_RETURN(study.mean_output_tokens,
                                optional_number(workload, "mean_output_tokens", source + ": workload"));
  }
  auto precisions = root.find("precisions");
  if (precisions != root.end()) {
    if (!precisions->is_array()) return invalid_argument(source + ": field 'precisions' must be a list");
    for (size_t i = 0; i < precisions->size(); ++i) {
      CROSSPOINT_ASSIGN_OR_RETURN(PrecisionSetup setup,
                                  parse_setup((*precisions)[i], source + ": precisions[" + std::to_string(i) + "]"));
      study.precisions.push_back(std::move(setup));
    }
  }
  auto cells = root.find("cells");
  if (cells == root.end() || !cells->is_array() || cells->empty())
    return invalid_argument(source + ": field 'cells' must be a non-empty list of results");
  for (size_t i = 0; i < cells->size(); ++i) {
    CROSSPOINT_ASSIGN_OR_RETURN(CellMeasurement cell,
                                parse_cell_measurement((*cells)[i], source + ": cells[" + std::to_string(i) + "]"));
    study.cells.push_back(std::move(cell));
  }
  return study;
}

Result<StudyResults> load_study_results(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return not_found(path + ": cannot open");
  std::stringstream text;
  text << in.rdbuf();
  return parse_study_results(text.str(), path);
}

}  // namespace crosspoint::analysis
