#include "quant/tensor_checks.h"

#include <nlohmann/json.hpp>

#include "kernels/weight_dtype.h"

namespace crosspoint {

std::string shape_string(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

Result<const TensorInfo*> require_tensor(const SafetensorsModel& tensors, const std::string& name, DType dtype,
                                         const std::vector<int64_t>& shape) {
  CROSSPOINT_ASSIGN_OR_RETURN(const TensorInfo* tensor, tensors.require(name));
  if (tensor->dtype != dtype)
    return corrupt(tensor->file + ": tensor " + name + " has dtype " + std::string(dtype_name(tensor->dtype)) +
                   ", expected " + std::string(dtype_name(dtype)));
  if (tensor->shape != shape)
    return corrupt(tensor->file + ": tensor " + name + " has shape " + shape_string(tensor->shape) + ", expected " +
                   shape_string(shape));
  return tensor;
}

Result<std::vector<float>> load_bias(const LinearWeightRequest& r) {
  std::vector<float> bias;
  if (!r.has_bias) return bias;
  CROSSPOINT_ASSIGN_OR_RETURN(const TensorInfo* b,
                              require_float_tensor(*r.tensors, r.prefix + ".bias", {r.out_features}));
  bias.resize(static_cast<size_t>(r.out_features));
  for (int64_t i = 0; i < r.out_features; ++i) bias[i] = load_weight(b->data, b->dtype, i);
  return bias;
}

std::string quant_method_of(const std::string& text) {
  if (text.empty()) return "";
  const auto q = nlohmann::json::parse(text, nullptr, false);
  if (!q.is_object() || !q.contains("quant_method") || !q["quant_method"].is_string()) return "";
  return q["quant_method"].get<std::string>();
}

bool is_block_fp8_config(const std::string& text) {
  if (text.empty()) return false;
  const auto q = nlohmann::json::parse(text, nullptr, false);
  if (!q.is_object()) return false;
  const auto method = q.value("quant_method", nlohmann::json());
  if (method == "fp8") return q.contains("weight_block_size") && !q["weight_block_size"].is_null();
  if (method != "compressed-tensors" || !q.contains("config_groups") || !q["config_groups"].is_object()) return false;
  for (const auto& [name, group] : q["config_groups"].items())
    if (group.is_object() && group.contains("weights") && group["weights"].is_object() &&
        group["weights"].value("strategy", nlohmann::json()) == "block")
      return true;
  return false;
}

std::string compressed_tensors_format_of(const std::string& text) {
  if (text.empty()) return "";
  const auto q = nlohmann::json::parse(text, nullptr, false);
  if (!q.is_object() || !q.contains("format") || !q["format"].is_string()) return "";
  return q["format"].get<std::string>();
}

}  // namespace crosspoint
