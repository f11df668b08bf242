#include "quant/quant_config.h"

#include <nlohmann/json.hpp>
#include <cctype>
#include <cstdint>
#include <optional>
#include <regex>
#include <type_traits>
#include <utility>

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

// 8-bit args of type `want_type` ("float": e4m3, "int": int8), symmetric, with the given
// dynamic flag and one of two strategies.
Status check_float8_args(const json& args, const std::string& where, const std::string& want_strategy_a,
                         const std::string& want_strategy_b, bool want_dynamic,
                         const std::string& want_type = "float") {
  const std::string what = want_type == "float" ? "FP8" : "INT8";
  if (!args.is_object()) return unsupported(where + " is missing (W8A8-" + what + " quantises activations)");
  CROSSPOINT_ASSIGN_OR_RETURN(int64_t bits, get_field<int64_t>(args, "num_bits", where, 8, true));
  CROSSPOINT_ASSIGN_OR_RETURN(std::string type, get_field<std::string>(args, "type", where, want_type, true));
  if (bits != 8 || type != want_type)
    return unsupported(where + " is " + std::to_string(bits) + "-bit " + type + ": only 8-bit " +
                       (want_type == "float" ? "float (e4m3)" : "int") + " is supported");
  CROSSPOINT_ASSIGN_OR_RETURN(bool symmetric, get_field<bool>(args, "symmetric", where, true, false));
  if (!symmetric) return unsupported(where + ".symmetric is false: asymmetric " + what + " is not supported");
  CROSSPOINT_ASSIGN_OR_RETURN(bool dynamic, get_field<bool>(args, "dynamic", where, false, false));
  if (dynamic != want_dynamic)
    return unsupported(where + ".dynamic is " + (dynamic ? "true" : "false") + ": expected " +
                       (want_dynamic ? "true" : "false"));
  CROSSPOINT_ASSIGN_OR_RETURN(std::string strategy, get_field<std::string>(args, "strategy", where, "", true));
  if (strategy != want_strategy_a && strategy != want_strategy_b)
    return unsupported(where + ".strategy is '" + strategy + "': expected '" + want_strategy_a + "'");
  return Status::ok();
}

// A [block_n, block_k] pair of positive block sizes at `field`, or an error naming it.
Result<std::pair<int64_t, int64_t>> block_sizes(const json& value, const std::string& field) {
  if (!value.is_array() || value.size() != 2 || !value[0].is_number_integer() || !value[1].is_number_integer() ||
      value[0].get<int64_t>() <= 0 || value[1].get<int64_t>() <= 0 || value[0].get<int64_t>() > (1 << 20) ||
      value[1].get<int64_t>() > (1 << 20))
    return unsupported(field + " is " + value.dump() + ": expected [block_n, block_k], two positive integers");
  return std::pair<int64_t, int64_t>{value[0].get<int64_t>(), value[1].get<int64_t>()};
}

// compressed-tensors' FP8_BLOCK: weights {8-bit float, "block", block_structure [bn, bk]},
// input_activations {8-bit float, "group", group_size bk, dynamic}.
Result<Fp8Config> parse_fp8_block_args(const json& weights, const json& inputs, const std::string& gw) {
  CROSSPOINT_RETURN_IF_ERROR(check_float8_args(weights, gw + ".weights", "block", "block", false));
  CROSSPOINT_RETURN_IF_ERROR(check_float8_args(inputs, gw + ".input_activations", "group", "group", true));
  Fp8Config f;
  CROSSPOINT_ASSIGN_OR_RETURN(auto blocks,
                              block_sizes(weights.value("block_structure", json()), gw + ".weights.block_structure"));
  f.block_n = blocks.first;
  f.block_k = blocks.second;
  CROSSPOINT_ASSIGN_OR_RETURN(int64_t group,
                              get_field<int64_t>(inputs, "group_size", gw + ".input_activations", 0, true));
  if (group != f.block_k)
    return unsupported(gw + ".input_activations.group_size is " + std::to_string(group) +
                       ": expected the weight block's " + std::to_string(f.block_k));
  return f;
}

// quant_method "fp8" (transformers' FineGrainedFP8Config and vLLM's Fp8Config):
// {"activation_scheme": "dynamic", "weight_block_size": [128, 128], "fmt": "e4m3",
// "modules_to_not_convert": [...]}; without weight_block_size, per-tensor weight scales.
Result<QuantConfig> parse_fp8_method(const json& q, const std::string& where) {
  QuantConfig config;
  CROSSPOINT_ASSIGN_OR_RETURN(std::string fmt, get_field<std::string>(q, "fmt", where, "e4m3", false));
  if (fmt != "e4m3") return unsupported(where + ".fmt is '" + fmt + "': only e4m3 is supported");
  CROSSPOINT_ASSIGN_OR_RETURN(std::string scale_fmt, get_field<std::string>(q, "scale_fmt", where, "float", false));
  if (scale_fmt != "float")
    return unsupported(where + ".scale_fmt is '" + scale_fmt + "': only float32 block scales are supported");
  CROSSPOINT_ASSIGN_OR_RETURN(std::string activations,
                              get_field<std::string>(q, "activation_scheme", where, "dynamic", false));
  if (activations != "dynamic" && activations != "static")
    return unsupported(where + ".activation_scheme is '" + activations + "': expected 'dynamic' or 'static'");
  if (q.contains("weight_block_size") && !q["weight_block_size"].is_null()) {
    if (activations != "dynamic")
      return unsupported(where + ".activation_scheme is 'static': block-wise FP8 quantises activations dynamically");
    CROSSPOINT_ASSIGN_OR_RETURN(auto blocks, block_sizes(q["weight_block_size"], where + ".weight_block_size"));
    config.scheme = QuantScheme::kFp8Block;
    config.fp8.block_n = blocks.first;
    config.fp8.block_k = blocks.second;
    config.fp8.block_scale_name = "weight_scale_inv";
  } else {
    config.scheme = QuantScheme::kFp8Dynamic;
    config.fp8.per_channel_weight_scale = false;
    config.fp8.static_input_scale = activations == "static";
  }
  for (const char* key : {"modules_to_not_convert", "ignored_layers"})
    if (q.contains(key) && q[key].is_array())
      for (const auto& name : q[key])
        if (name.is_string()) config.ignore_containing.push_back(name.get<std::string>());
  return config;
}

// W4A16 weights of a pack-quantized group: 4-bit int, static, group (group_size > 0) or
// channel (one group over all inputs), symmetric or not, any actorder.
Result<GptqConfig> parse_int4_weight_args(const json& args, const std::string& where) {
  if (!args.is_object()) return unsupported(where + " is missing");
  GptqConfig g;
  g.zero_point_minus_one = false;
  CROSSPOINT_ASSIGN_OR_RETURN(g.bits, get_field<int64_t>(args, "num_bits", where, 4, true));
  CROSSPOINT_ASSIGN_OR_RETURN(std::string type, get_field<std::string>(args, "type", where, "int", true));
  if (g.bits != 4 || type != "int")
    return unsupported(where + " is " + std::to_string(g.bits) + "-bit " + type +
                       ": pack-quantized is supported for 4-bit int weights (W4A16)");
  CROSSPOINT_ASSIGN_OR_RETURN(g.sym, get_field<bool>(args, "symmetric", where, true, false));
  CROSSPOINT_ASSIGN_OR_RETURN(bool dynamic, get_field<bool>(args, "dynamic", where, false, false));
  if (dynamic) return unsupported(where + ".dynamic is true: int4 weights must be static");
  CROSSPOINT_ASSIGN_OR_RETURN(std::string strategy, get_field<std::string>(args, "strategy", where, "", true));
  if (strategy == "group") {
    CROSSPOINT_ASSIGN_OR_RETURN(g.group_size, get_field<int64_t>(args, "group_size", where, 0, true));
    if (g.group_size <= 0)
      return unsupported(where + ".group_size is " + std::to_string(g.group_size) + ": expected a positive size");
  } else if (strategy == "channel") {
    g.group_size = -1;
  } else {
    return unsupported(where + ".strategy is '" + strategy + "': expected 'group' or 'channel'");
  }
  CROSSPOINT_ASSIGN_OR_RETURN(std::string actorder, get_field<std::string>(args, "actorder", where, "", false));
  if (!actorder.empty() && actorder != "group" && actorder != "dynamic" && actorder != "weight" && actorder != "static")
    return unsupported(where + ".actorder is '" + actorder + "': expected 'group', 'weight' or null");
  g.desc_act = actorder == "group" || actorder == "dynamic";  // weight_g_idx is stored then
  return g;
}

Result<QuantConfig> parse_compressed_tensors(const json& q, const std::string& where) {
  QuantConfig config;
  CROSSPOINT_ASSIGN_OR_RETURN(std::string format, get_field<std::string>(q, "format", where, "", true));
  if (format == "float-quantized") config.scheme = QuantScheme::kFp8Dynamic;
  else if (format == "pack-quantized") config.scheme = QuantScheme::kPackedInt4;
  else if (format == "int-quantized") config.scheme = QuantScheme::kInt8;
  else
    return unsupported(where + ".format is '" + format +
                       "': supported are 'float-quantized' (W8A8-FP8), 'int-quantized' (W8A8-INT8) and "
                       "'pack-quantized' (W4A16)");
  CROSSPOINT_ASSIGN_OR_RETURN(std::string status,
                              get_field<std::string>(q, "quantization_status", where, "compressed", false));
  // FP8 and INT8 weights are stored as is either way
  const bool frozen_ok = config.scheme == QuantScheme::kFp8Dynamic || config.scheme == QuantScheme::kInt8;
  if (status != "compressed" && !(frozen_ok && status == "frozen"))
    return unsupported(where + ".quantization_status is '" + status + "': expected 'compressed'");
  if (!q.contains("config_groups") || !q["config_groups"].is_object() || q["config_groups"].empty())
    return unsupported(where + ".config_groups is missing or empty");
  std::optional<json> first_weights;
  for (const auto& [group_name, group] : q["config_groups"].items()) {
    const std::string gw = where + ".config_groups." + group_name;
    if (!group.is_object()) return unsupported(gw + " is not an object");
    const json weights = group.value("weights", json());
    if (first_weights && weights != *first_weights)
      return unsupported(gw + ".weights differs from the first group's: mixed schemes are not supported");
    first_weights = weights;
    if (group.contains("output_activations") && !group["output_activations"].is_null())
      return unsupported(gw + ".output_activations is set: output quantisation is not supported");
    if (config.scheme == QuantScheme::kFp8Dynamic && weights.is_object() &&
        weights.value("strategy", json()) == "block") {
      CROSSPOINT_ASSIGN_OR_RETURN(config.fp8,
                                  parse_fp8_block_args(weights, group.value("input_activations", json()), gw));
      config.scheme = QuantScheme::kFp8Block;
    } else if (config.scheme == QuantScheme::kInt8) {
      CROSSPOINT_RETURN_IF_ERROR(check_float8_args(weights, gw + ".weights", "channel", "tensor", false, "int"));
      const json inputs = group.value("input_activations", json());
      const bool static_inputs = inputs.is_object() && inputs.value("dynamic", json(true)) == json(false);
      CROSSPOINT_RETURN_IF_ERROR(
          static_inputs ? check_float8_args(inputs, gw + ".input_activations", "tensor", "tensor", false, "int")
                        : check_float8_args(inputs, gw + ".input_activations", "token", "token", true, "int"));
      config.int8.static_input_scale = static_inputs;
    } else if (config.scheme == QuantScheme::kFp8Dynamic) {
      CROSSPOINT_RETURN_IF_ERROR(check_float8_args(weights, gw + ".weights", "channel", "tensor", false));
      const json inputs = group.value("input_activations", json());
      const bool static_inputs = inputs.is_object() && inputs.value("dynamic", json(true)) == json(false);
      CROSSPOINT_RETURN_IF_ERROR(static_inputs
                                     ? check_float8_args(inputs, gw + ".input_activations", "tensor", "tensor", false)
                                     : check_float8_args(inputs, gw + ".input_activations", "token", "token", true));
      config.fp8.per_channel_weight_scale = weights["strategy"] == "channel";
      config.fp8.static_input_scale = static_inputs;
    } else {
      if (group.contains("input_activations") && !group["input_activations"].is_null())
        return unsupported(gw + ".input_activations is set: pack-quantized is supported for W4A16 (weights only)");
      CROSSPOINT_ASSIGN_OR_RETURN(config.gptq, parse_int4_weight_args(weights, gw + ".weights"));
    }
    if (group.contains("targets") && group["targets"].is_array())
      for (const auto& target : group["targets"])
        if (target.is_string()) config.targets.push_back(target.get<std::string>());
  }
  if (q.contains("ignore") && q["ignore"].is_array())
    for (const auto& name : q["ignore"])
      if (name.is_string()) config.ignore.push_back(name.get<std::string>());
  // kv_cache_scheme (an FP8 KV cache's static scales) is checked with config.json (ModelConfig).
  return config;
}

// AutoAWQ's config: {"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": true,
// "version": "gemm", "modules_to_not_convert": null}.
Result<QuantConfig> parse_awq(const json& q, const std::string& where) {
  QuantConfig config;
  config.scheme = QuantScheme::kAwqInt4;
  GptqConfig& g = config.gptq;
  g.sym = false;
  g.zero_point_minus_one = false;
  CROSSPOINT_ASSIGN_OR_RETURN(g.bits, get_field<int64_t>(q, "bits", where, 4, false));
  if (g.bits != 4) return unsupported(where + ".bits is " + std::to_string(g.bits) + ": only 4-bit AWQ is supported");
  CROSSPOINT_ASSIGN_OR_RETURN(g.group_size, get_field<int64_t>(q, "group_size", where, 128, true));
  if (g.group_size != -1 && g.group_size <= 0)
    return unsupported(where + ".group_size is " + std::to_string(g.group_size) + ": expected -1 or a positive size");
  CROSSPOINT_ASSIGN_OR_RETURN(bool zero_point, get_field<bool>(q, "zero_point", where, true, false));
  if (!zero_point) return unsupported(where + ".zero_point is false: only AWQ with zero points is supported");
  CROSSPOINT_ASSIGN_OR_RETURN(std::string version, get_field<std::string>(q, "version", where, "gemm", false));
  for (char& c : version) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (version != "gemm")
    return unsupported(where + ".version is '" + version + "': only AutoAWQ's 'gemm' layout is supported");
  if (q.contains("modules_to_not_convert") && q["modules_to_not_convert"].is_array())
    for (const auto& name : q["modules_to_not_convert"])
      if (name.is_string()) config.ignore_containing.push_back(name.get<std::string>());
  return config;
}

}  // namespace

namespace {

// compressed-tensors' module matching: an exact name or "re:<regex>" matching the whole name.
bool matches_module_pattern(const std::string& pattern, const std::string& name) {
  if (pattern.rfind("re:", 0) != 0) return pattern == name;
  try {
    return std::regex_match(name, std::regex(pattern.substr(3)));
  } catch (const std::regex_error&) {
    return false;  // an unreadable pattern matches nothing
  }
}

}  // namespace

bool QuantConfig::is_ignored(const std::string& name) const {
  for (const std::string& part : ignore_containing)
    if (name.find(part) != std::string::npos) return true;
  if (!targets.empty()) {
    bool targeted = false;
    for (const std::string& target : targets)
      targeted = targeted || target == "Linear" || matches_module_pattern(target, name);
    if (!targeted) return true;
  }
  for (const std::string& pattern : ignore) {
    if (matches_module_pattern(pattern, name)) return true;
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
  if (method == "awq") return parse_awq(q, where);
  if (method == "fp8") return parse_fp8_method(q, where);
  return unsupported(where + ".quant_method is '" + method +
                     "': supported are 'gptq', 'awq', 'fp8' and 'compressed-tensors'");
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

std::string fp8_dynamic_quantization_config_json(const Fp8Config& f, const std::vector<std::string>& ignore) {
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
            {"ignore", ignore},
            {"kv_cache_scheme", nullptr}};
  return q.dump(2);
}

std::string int8_dynamic_quantization_config_json(const std::vector<std::string>& ignore) {
  const json weights = {{"num_bits", 8},
                        {"type", "int"},
                        {"symmetric", true},
                        {"dynamic", false},
                        {"strategy", "channel"},
                        {"group_size", nullptr},
                        {"block_structure", nullptr},
                        {"actorder", nullptr},
                        {"observer", "minmax"},
                        {"observer_kwargs", json::object()}};
  const json inputs = {{"num_bits", 8},
                       {"type", "int"},
                       {"symmetric", true},
                       {"dynamic", true},
                       {"strategy", "token"},
                       {"group_size", nullptr},
                       {"block_structure", nullptr},
                       {"actorder", nullptr},
                       {"observer", nullptr},
                       {"observer_kwargs", json::object()}};
  json q = {{"quant_method", "compressed-tensors"},
            {"format", "int-quantized"},
            {"quantization_status", "compressed"},
            {"config_groups",
             {{"group_0",
               {{"targets", {"Linear"}},
                {"weights", weights},
                {"input_activations", inputs},
                {"output_activations", nullptr},
                {"format", "int-quantized"}}}}},
            {"ignore", ignore},
            {"kv_cache_scheme", nullptr}};
  return q.dump(2);
}

}  // namespace crosspoint
