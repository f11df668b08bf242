#include "analysis/hardware_json.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace crosspoint::analysis {

nlohmann::json ceilings_to_json(const HardwareCeilings& ceilings) {
  return {
      {"name", ceilings.name},
      {"memory_gb", ceilings.memory_gb},
      {"bandwidth_gb_s", ceilings.bandwidth_gb_s},
      {"fp16_tflops", ceilings.fp16_tflops},
      {"fp8_tflops", ceilings.fp8_tflops},
      {"int8_tops", ceilings.int8_tops},
      {"fp32_tflops", ceilings.fp32_tflops},
      {"critical_intensity_fp16", critical_intensity(ceilings.fp16_tflops, ceilings.bandwidth_gb_s)},
      {"source", ceilings.source},
  };
}

Result<HardwareCeilings> ceilings_from_json(const nlohmann::json& input, const std::string& source) {
  const nlohmann::json& object = input.contains("ceilings") ? input["ceilings"] : input;
  if (!object.is_object()) return invalid_argument(source + ": hardware ceilings must be a JSON object");
  HardwareCeilings ceilings;
  auto number = [&](const char* key, double* out) -> Status {
    auto it = object.find(key);
    if (it == object.end() || it->is_null()) return Status::ok();
    if (!it->is_number()) return invalid_argument(source + ": field '" + key + "' must be a number");
    *out = it->get<double>();
    return Status::ok();
  };
  CROSSPOINT_RETURN_IF_ERROR(number("memory_gb", &ceilings.memory_gb));
  CROSSPOINT_RETURN_IF_ERROR(number("bandwidth_gb_s", &ceilings.bandwidth_gb_s));
  CROSSPOINT_RETURN_IF_ERROR(number("fp16_tflops", &ceilings.fp16_tflops));
  CROSSPOINT_RETURN_IF_ERROR(number("fp8_tflops", &ceilings.fp8_tflops));
  CROSSPOINT_RETURN_IF_ERROR(number("int8_tops", &ceilings.int8_tops));
  CROSSPOINT_RETURN_IF_ERROR(number("fp32_tflops", &ceilings.fp32_tflops));
  if (ceilings.bandwidth_gb_s <= 0) return invalid_argument(source + ": field 'bandwidth_gb_s' must be positive");
  if (object.contains("name") && object["name"].is_string()) ceilings.name = object["name"].get<std::string>();
  if (object.contains("source") && object["source"].is_string()) ceilings.source = object["source"].get<std::string>();
  return ceilings;
}

Result<HardwareCeilings> load_ceilings(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return not_found(path + ": cannot open");
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json object;
  try {
    object = nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::exception& e) { return corrupt(path + ": not valid JSON: " + e.what()); }
  return ceilings_from_json(object, path);
}

}  // namespace crosspoint::analysis
