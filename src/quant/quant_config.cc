#include "quant/quant_config.h"

#include <nlohmann/json.hpp>
#include <cstdint>
#include <regex>
#include <type_traits>

namespace crosspoint {
namespace {

using json = nlohmann::json;

// Field `key` of `object` as T, or an error naming `where.key`.
template <typename T>
Result<T> get_field(const json& object, const std::string& key, const std::string& where, const T& fallback,
                    bool required) {
  if (!object.contains(key) || object[key].is_null()) {
    if (required) return unsupported(where + "." + key + " is missing");
    return fallback;
  }
  const json& value = object[key];
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    // nlohmann converts a float such as 1e70 with a plain cast, which is undefined behaviour.
    const bool in_range = value.is_number_integer() &&
                          !(value.is_number_unsigned() && value.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX));
    if (!in_range) return unsupported(where + "." + key + " must be an integer: " + value.dump());
  }
  try {
    return value.get<T>();
  } catch (const json::exception&) {
    return unsupported(where + "." + key + " has the wrong type: " + object[key].dump());
  }
}

Result<QuantConfig> parse_gptq(const json& q, const std::string& where) {
  QuantConfig config;
  config.scheme = QuantScheme::kGptqInt4;
  GptqConfig& g = config.gptq;
  CROSSPOINT_ASSIGN_OR_RETURN(g.bits, get_field<int64_t>(q, "bits", where, 4, true));
  if (g.bits != 4) return unsupported(where + ".bits is " + std::to_string(g.bits) + ": only 4-bit GPTQ is supported");
  CROSSPOINT_ASSIGN_OR_RETURN(g.group_size, get_field<int64_t>(q, "group_size", where, 128, true));
  if (g.group_size != -1 && g.group_size <= 0)
    return unsupported(where + ".group_size is " + std::to_string(g.group_size) + ": expected -1 or a positive size");
  CROSSPOINT_ASSIGN_OR_RETURN(g.desc_act, get_field<bool>(q, "desc_act", where, false, false));
  CROSSPOINT_ASSIGN_OR_RETURN(g.sym, get_field<bool>(q, "sym", where, true, false));
  CROSSPOINT_ASSIGN_OR_RETURN(g.static_groups, get_field<bool>(q, "static_groups", where, false, false));
  CROSSPOINT_ASSIGN_OR_RETURN(std::string format, get_field<std::string>(q, "checkpoint_format", where, "gptq", false));
  if (format == "gptq") g.zero_point_minus_one = true;
  else if (format == "gptq_v2") g.zero_point_minus_one = false;
  else return unsupported(where + ".checkpoint_format is '" + format + "': expected 'gptq' or 'gptq_v2'");
  return config;
}

Status check_float8_args(const json& args, const std::string& where, const std::string& want_strategy_a,
                         const std::string& want_strategy_b, bool want_dynamic) {
  if (!args.is_object())
    return unsupported(where + " is missing (only FP8 W8A8 with dynamic activations is supported)");
  CROSSPOINT_ASSIGN_OR_RETURN(int64_t bits, get_field<int64_t>(args, "num_bits", where, 8, true));
  CROSSPOINT_ASSIGN_OR_RETURN(std::string type, get_field<std::string>(args, "type", where, "float", true));
  if (bits != 8 || type != "float")
    return unsupported(where + " is " + std::to_string(bits) + "-bit " + type +
                       ": only 8-bit float (e4m3) is supported");
  CROSSPOINT_ASSIGN_OR_RETURN(bool symmetric, get_field<bool>(args, "symmetric", where, true, false));
  if (!symmetric) return unsupported(where + ".symmetric is false: asymmetric FP8 is not supported");
  CROSSPOINT_ASSIGN_OR_RETURN(bool dynamic, get_field<bool>(args, "dynamic", where, false, false));
  if (dynamic != want_dynamic)
    return unsupported(where + ".dynamic is " + (dynamic ? "true" : "false") + ": expected " +
                       (want_dynamic ? "true" : "false"));
  CROSSPOINT_ASSIGN_OR_RETURN(std::string strategy, get_field<std::string>(args, "strategy", where, "", true));
  if (strategy != want_strategy_a && strategy != want_strategy_b)
    return unsupported(where + ".strategy is '" + strategy + "': expected '" + want_strategy_a + "'");
  return Status::ok();
}

Result<QuantConfig> parse_compressed_tensors(const json& q, const std::string& where) {
  QuantConfig config;
  config.scheme = QuantScheme::kFp8Dynamic;
  CROSSPOINT_ASSIGN_OR_RETURN(std::string format, get_field<std::string>(q, "format", where, "", true));
  if (format != "float-quantized")
    return unsupported(where + ".format is '" + format + "': only 'float-quantized' (FP8) is supported");
  CROSSPOINT_ASSIGN_OR_RETURN(std::string status,
                              get_field<std::string>(q, "quantization_status", where, "compressed", false));
  if (status != "compressed" && status != "frozen")
    return unsupported(where + ".quantization_status is '" + status + "': expected 'compressed'");
  if (!q.contains("config_groups") || !q["config_groups"].is_object() || q["config_groups"].empty())
    return unsupported(where + ".config_groups is missing or empty");
  for (const auto& [group_name, group] : q["config_groups"].items()) {
    const std::string gw = where + ".config_groups." + group_name;
    if (!group.is_object()) return unsupported(gw + " is not an object");
    CROSSPOINT_RETURN_IF_ERROR(
        check_float8_args(group.value("weights", json()), gw + ".weights", "channel", "tensor", false));
    CROSSPOINT_RETURN_IF_ERROR(
        check_float8_args(group.value("input_activations", json()), gw + ".input_activations", "token", "token", true));
    if (group.contains("output_activations") && !group["output_activations"].is_null())
      return unsupported(gw + ".output_activations is set: output quantisation is not supported");
    config.fp8.per_channel_weight_scale = group["weights"]["strategy"] == "channel";
  }
  if (q.contains("ignore") && q["ignore"].is_array())
    for (const auto& name : q["ignore"])
      if (name.is_string()) config.fp8.ignore.push_back(name.get<std::string>());
  // kv_cache_scheme (an FP8 KV cache's static scales) is checked with config.json (ModelConfig).
  return config;
}

}  // namespace

bool QuantConfig::is_ignored(const std::string& name) const {
  for (const std::string& pattern : fp8.ignore) {
    if (pattern.rfind("re:", 0) == 0) {
      try {
        if (std::regex_match(name, std::regex(pattern.substr(3)))) return true;
      } catch (const std::regex_error&) {
        continue;  // an unreadable pattern ignores nothing
      }
    } else if (pattern == name) {
      return true;
    }
  }
  return false;
}

Result<QuantConfig> parse_quant_config(const std::string& json_text, const std::string& source) {
  if (json_text.empty()) return QuantConfig{};
  const std::string where = source + ": quantization_config";
  const json q = json::parse(json_text, nullptr, false);
  if (!q.is_object()) return corrupt(where + " is not a JSON object");
  CROSSPOINT_ASSIGN_OR_RETURN(std::string method, get_field<std::string>(q, "quant_method", where, "", true));
  if (method == "gptq") return parse_gptq(q, where);
  if (method == "compressed-tensors") return parse_compressed_tensors(q, where);
  return unsupported(where + ".quant_method is '" + method + "': supported are 'gptq' and 'compressed-tensors'");
}

std::string gptq_quantization_config_json(const GptqConfig& g, double damp_percent, bool true_sequential) {
  json q = {{"quant_method", "gptq"},
            {"bits", g.bits},
            {"group_size", g.group_size},
            {"desc_act", g.desc_act},
            {"sym", g.sym},
            {"damp_percent", damp_percent},
            {"true_sequential", true_sequential},
            {"static_groups", g.static_groups},
            {"checkpoint_format", g.zero_point_minus_one ? "gptq" : "gptq_v2"},
            {"meta", {{"quantizer", {"crosspoint"}}}}};
  return q.dump(2);
}

std::string fp8_dynamic_quantization_config_json(const Fp8Config& f) {
  const json weights = {{"num_bits", 8},
                        {"type", "float"},
                        {"symmetric", true},
                        {"dynamic", false},
                        {"strategy", f.per_channel_weight_scale ? "channel" : "tensor"},
                        {"group_size", nullptr},
                        {"block_structure", nullptr},
                        {"actorder", nullptr},
                        {"observer", "minmax"},
                        {"observer_kwargs", json::object()}};
  const json inputs = {{"num_bits", 8},
                       {"type", "float"},
                       {"symmetric", true},
                       {"dynamic", true},
                       {"strategy", "token"},
                       {"group_size", nullptr},
                       {"block_structure", nullptr},
                       {"actorder", nullptr},
                       {"observer", nullptr},
                       {"observer_kwargs", json::object()}};
  json q = {{"quant_method", "compressed-tensors"},
            {"format", "float-quantized"},
            {"quantization_status", "compressed"},
            {"config_groups",
             {{"group_0",
               {{"targets", {"Linear"}},
                {"weights", weights},
                {"input_activations", inputs},
                {"output_activations", nullptr},
                {"format", "float-quantized"}}}}},
            {"ignore", f.ignore},
            {"kv_cache_scheme", nullptr}};
  return q.dump(2);
}

}  // namespace crosspoint
