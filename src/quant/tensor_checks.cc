#include "quant/tensor_checks.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>

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

Result<std::vector<float>> read_output_channel_scales(const SafetensorsModel& t, const std::string& scale_name,
                                                      int64_t out_features) {
  CROSSPOINT_ASSIGN_OR_RETURN(const TensorInfo* scale, t.require(scale_name));
  if (!is_float_weight_dtype(scale->dtype))
    return corrupt(scale->file + ": tensor " + scale_name + " has dtype " + std::string(dtype_name(scale->dtype)) +
                   ", expected f32, f16 or bf16");
  const int64_t num_scales = scale->num_elements();
  const bool per_channel = num_scales == out_features && scale->shape.size() >= 1 && scale->shape[0] == out_features;
  if (!per_channel && num_scales != 1)
    return corrupt(scale->file + ": tensor " + scale_name + " has shape " + shape_string(scale->shape) +
                   ", expected [" + std::to_string(out_features) + ", 1] (per channel) or [1] (per tensor)");
  std::vector<float> scales(static_cast<size_t>(out_features));
  for (int64_t n = 0; n < out_features; ++n) {
    scales[n] = load_weight(scale->data, scale->dtype, per_channel ? n : 0);
    if (!std::isfinite(scales[n]) || scales[n] < 0.0f)
      return corrupt(scale->file + ": tensor " + scale_name + " holds " + std::to_string(scales[n]) + " at row " +
                     std::to_string(n) + ", expected a finite non-negative scale");
  }
  return scales;
}

Result<float> read_input_scale(const SafetensorsModel& t, const std::string& name) {
  CROSSPOINT_ASSIGN_OR_RETURN(const TensorInfo* tensor, t.require(name));
  if (!is_float_weight_dtype(tensor->dtype) || tensor->num_elements() != 1)
    return corrupt(tensor->file + ": tensor " + name + " has dtype " + std::string(dtype_name(tensor->dtype)) +
                   " and shape " + shape_string(tensor->shape) + ", expected one f32, f16 or bf16 scale");
  const float scale = load_weight(tensor->data, tensor->dtype, 0);
  if (!std::isfinite(scale) || scale <= 0.0f)
    return corrupt(tensor->file + ": tensor " + name + " holds " + std::to_string(scale) +
                   ", expected a finite positive scale");
  return scale;
}

Result<float> fused_input_scale(const SafetensorsModel& t, const std::string& prefix) {
  static const std::vector<std::vector<std::string>> kFused = {{"q_proj", "k_proj", "v_proj"},
                                                               {"gate_proj", "up_proj"}};
  const size_t dot = prefix.rfind('.');
  const std::string parent = dot == std::string::npos ? "" : prefix.substr(0, dot + 1);
  const std::string leaf = prefix.substr(parent.size());
  std::vector<std::string> names = {leaf};
  for (const auto& group : kFused)
    if (std::find(group.begin(), group.end(), leaf) != group.end()) names = group;
  float scale = 0.0f;
  for (const std::string& name : names) {
    if (name != leaf && t.find(parent + name + ".input_scale") == nullptr) continue;
    CROSSPOINT_ASSIGN_OR_RETURN(float s, read_input_scale(t, parent + name + ".input_scale"));
    scale = std::max(scale, s);
  }
  return scale;
}

}  // namespace crosspoint
