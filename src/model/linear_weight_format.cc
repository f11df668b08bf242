#include "model/linear_weight_format.h"

#include <nlohmann/json.hpp>

#include "kernels/weight_dtype.h"

namespace crosspoint {
namespace {

std::string shape_string(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

class DenseFormat final : public LinearWeightFormat {
 public:
  std::string name() const override { return "dense"; }
  bool matches(const ModelConfig& config) const override { return config.quantization_config_json.empty(); }
  Result<std::unique_ptr<LinearWeight>> load(const LinearWeightRequest& request) const override {
    return load_dense_linear_weight(request);
  }
};

}  // namespace

Result<const TensorInfo*> require_float_tensor(const SafetensorsModel& tensors, const std::string& name,
                                               const std::vector<int64_t>& shape) {
  CROSSPOINT_ASSIGN_OR_RETURN(const TensorInfo* tensor, tensors.require(name));
  if (!is_float_weight_dtype(tensor->dtype))
    return corrupt(tensor->file + ": tensor " + name + " has dtype " + std::string(dtype_name(tensor->dtype)) +
                   ", expected f32, f16 or bf16");
  if (tensor->shape != shape)
    return corrupt(tensor->file + ": tensor " + name + " has shape " + shape_string(tensor->shape) +
                   " but config.json implies " + shape_string(shape));
  return tensor;
}

Result<std::unique_ptr<LinearWeight>> load_dense_linear_weight(const LinearWeightRequest& r) {
  CROSSPOINT_ASSIGN_OR_RETURN(const TensorInfo* weight,
                              require_float_tensor(*r.tensors, r.prefix + ".weight", {r.out_features, r.in_features}));
  std::vector<float> bias;
  if (r.has_bias) {
    CROSSPOINT_ASSIGN_OR_RETURN(const TensorInfo* b,
                                require_float_tensor(*r.tensors, r.prefix + ".bias", {r.out_features}));
    bias.resize(r.out_features);
    for (int64_t i = 0; i < r.out_features; ++i) bias[i] = load_weight(b->data, b->dtype, i);
  }
  return std::unique_ptr<LinearWeight>(
      new DenseLinearWeight(weight->data, weight->dtype, r.out_features, r.in_features, std::move(bias)));
}

std::shared_ptr<const LinearWeightFormat> dense_linear_weight_format() {
  static const auto format = std::make_shared<const DenseFormat>();
  return format;
}

Result<std::shared_ptr<const LinearWeightFormat>> select_linear_weight_format(
    const ModelConfig& config, const std::vector<std::shared_ptr<const LinearWeightFormat>>& formats) {
  const auto q = nlohmann::json::parse(config.quantization_config_json, nullptr, false);
  // compressed-tensors with a KV cache scheme and no config_groups: only the KV cache is quantised.
  if (config.kv_cache_scheme && q.is_object() &&
      (!q.contains("config_groups") || q["config_groups"].is_null() || q["config_groups"].empty()))
    return dense_linear_weight_format();
  for (const auto& format : formats)
    if (format->matches(config)) return format;
  if (config.quantization_config_json.empty()) return dense_linear_weight_format();
  std::string method = "unknown";
  if (q.is_object()) {
    if (q.contains("quant_method") && q["quant_method"].is_string()) method = q["quant_method"].get<std::string>();
    else if (q.contains("format") && q["format"].is_string()) method = q["format"].get<std::string>();
  }
  return unsupported("config.json: quantization_config with quant_method '" + method +
                     "' has no weight format in this build");
}

}  // namespace crosspoint
