#include "server/generation_defaults.h"

#include <algorithm>
#include <filesystem>
#include <limits>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/mapped_file.h"

namespace crosspoint {
namespace {

using json = nlohmann::json;

Status bad_key(const std::string& where, const std::string& key, const std::string& why) {
  return invalid_argument(where + ": '" + key + "' " + why);
}

// Copies the known keys of `config` (null: unset) into `out`; `where` names it in errors.
Status apply_keys(const json& config, const std::string& where, GenerationDefaults* out) {
  auto number = [&](const char* key, std::optional<float>* dst, auto valid, const char* range) -> Status {
    auto it = config.find(key);
    if (it == config.end() || it->is_null()) return Status::ok();
    if (!it->is_number()) return bad_key(where, key, "must be a number");
    const double v = it->get<double>();
    if (!valid(v)) return bad_key(where, key, fmt::format("must be {}, got {}", range, v));
    *dst = static_cast<float>(v);
    return Status::ok();
  };
  CROSSPOINT_RETURN_IF_ERROR(
      number("repetition_penalty", &out->repetition_penalty, [](double v) { return v > 0; }, "greater than 0"));
  CROSSPOINT_RETURN_IF_ERROR(number("temperature", &out->temperature, [](double v) { return v >= 0; }, "non-negative"));
  CROSSPOINT_RETURN_IF_ERROR(number("top_p", &out->top_p, [](double v) { return v > 0 && v <= 1; }, "in (0, 1]"));
  CROSSPOINT_RETURN_IF_ERROR(number("min_p", &out->min_p, [](double v) { return v >= 0 && v <= 1; }, "in [0, 1]"));
  if (auto it = config.find("top_k"); it != config.end() && !it->is_null()) {
    if (!it->is_number_integer()) return bad_key(where, "top_k", "must be an integer");
    const int64_t v = it->get<int64_t>();
    if (v < -1) return bad_key(where, "top_k", fmt::format("must be -1, 0 (off) or positive, got {}", v));
    out->top_k = static_cast<int32_t>(std::min<int64_t>(v, std::numeric_limits<int32_t>::max()));
  }
  if (auto it = config.find("max_new_tokens"); it != config.end() && !it->is_null()) {
    if (!it->is_number_integer()) return bad_key(where, "max_new_tokens", "must be an integer");
    const int64_t v = it->get<int64_t>();
    if (v < 1) return bad_key(where, "max_new_tokens", fmt::format("must be at least 1, got {}", v));
    out->max_tokens = v;
  }
  return Status::ok();
}

Result<json> read_json_object(const std::filesystem::path& path) {
  CROSSPOINT_ASSIGN_OR_RETURN(std::string text, read_text_file(path.string()));
  json config = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (config.is_discarded()) return invalid_argument(path.string() + ": not valid JSON");
  if (!config.is_object()) return invalid_argument(path.string() + ": must be a JSON object");
  return config;
}

}  // namespace

std::string GenerationDefaults::describe() const {
  std::string s;
  auto add = [&](const std::string& item) { s += (s.empty() ? "" : " ") + item; };
  if (repetition_penalty) add(fmt::format("repetition_penalty={}", *repetition_penalty));
  if (temperature) add(fmt::format("temperature={}", *temperature));
  if (top_k) add(fmt::format("top_k={}", *top_k));
  if (top_p) add(fmt::format("top_p={}", *top_p));
  if (min_p) add(fmt::format("min_p={}", *min_p));
  if (max_tokens) add(fmt::format("max_tokens={}", *max_tokens));
  return s;
}

Result<GenerationDefaults> load_generation_defaults(const std::string& mode, const std::string& model_dir,
                                                    const std::string& override_json) {
  GenerationDefaults out;
  if (mode != "vllm") {
    const bool own = mode == "auto";
    const std::filesystem::path path = std::filesystem::path(own ? model_dir : mode) / "generation_config.json";
    if (!own && !std::filesystem::is_directory(mode))
      return invalid_argument("--generation-config " + mode + ": not auto, vllm or a directory");
    if (std::filesystem::exists(path)) {
      CROSSPOINT_ASSIGN_OR_RETURN(json config, read_json_object(path));
      CROSSPOINT_RETURN_IF_ERROR(apply_keys(config, path.string(), &out));
      out.source = path.string();
    } else if (!own) {
      return not_found("--generation-config " + mode + ": no generation_config.json there");
    }
  }
  if (!override_json.empty()) {
    json config = json::parse(override_json, nullptr, /*allow_exceptions=*/false);
    if (config.is_discarded() || !config.is_object())
      return invalid_argument("--override-generation-config: must be a JSON object, got " + override_json);
    CROSSPOINT_RETURN_IF_ERROR(apply_keys(config, "--override-generation-config", &out));
    out.source += std::string(out.source.empty() ? "" : " + ") + "--override-generation-config";
  }
  return out;
}

}  // namespace crosspoint
