#include "quant/fp8_linear_weight.h"

#include <algorithm>
#include <cmath>

#include "kernels/fp8.h"
#include "kernels/weight_dtype.h"
#include "quant/quant_config.h"
#include "quant/tensor_checks.h"

namespace crosspoint {

Fp8LinearWeight::Fp8LinearWeight(const uint8_t* weight, std::vector<float> weight_scale, std::vector<float> bias,
                                 int64_t out_features, int64_t in_features, float input_scale)
    : weight_(weight),
      weight_scale_(std::move(weight_scale)),
      bias_(std::move(bias)),
      out_features_(out_features),
      in_features_(in_features),
      input_scale_(input_scale) {
  CROSSPOINT_CHECK(static_cast<int64_t>(weight_scale_.size()) == out_features_,
                   "Fp8LinearWeight: one scale per output");
  CROSSPOINT_CHECK(bias_.empty() || static_cast<int64_t>(bias_.size()) == out_features_, "Fp8LinearWeight: bias size");
}

Status Fp8LinearWeight::forward(const float* x, int64_t num_rows, int64_t x_row_stride, float* y) const {
  Fp8LinearArgs args;
  args.x = x;
  args.x_row_stride = x_row_stride;
  args.weight = weight_;
  args.weight_scale = weight_scale_.data();
  args.bias = bias_.empty() ? nullptr : bias_.data();
  args.y = y;
  args.num_rows = num_rows;
  args.in_features = in_features_;
  args.out_features = out_features_;
  args.input_scale = input_scale_;
  return fp8_linear(args);
}

size_t Fp8LinearWeight::weight_bytes() const {
  return static_cast<size_t>(out_features_) * in_features_ + (weight_scale_.size() + bias_.size()) * sizeof(float);
}

namespace {

// One scale from a [1] or [] float tensor, finite and positive, or an error naming it.
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

// The static activation scale of `prefix`: the largest of the layers the GPU runs as one
// linear with it (q/k/v_proj, gate/up_proj), so both devices quantise that input alike.
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

class Fp8Format final : public LinearWeightFormat {
 public:
  std::string name() const override { return "w8a8-fp8"; }
  bool matches(const ModelConfig& config) const override {
    // Every compressed-tensors format but W4A16's (its parser names what is not FP8), and vLLM's
    // per-tensor "fp8"; block-wise FP8 has its own format.
    const std::string& text = config.quantization_config_json;
    const std::string method = quant_method_of(text);
    if (is_block_fp8_config(text)) return false;
    return method == "fp8" ||
           (method == "compressed-tensors" && compressed_tensors_format_of(text) != "pack-quantized");
  }
  Result<std::unique_ptr<LinearWeight>> load(const LinearWeightRequest& r) const override {
    CROSSPOINT_ASSIGN_OR_RETURN(QuantConfig q, parse_quant_config(r.config->quantization_config_json));
    if (r.is_lm_head || q.is_ignored(r.prefix)) return load_dense_linear_weight(r);
    const SafetensorsModel& t = *r.tensors;
    const std::string weight_name = r.prefix + ".weight";
    CROSSPOINT_ASSIGN_OR_RETURN(const TensorInfo* weight,
                                require_tensor(t, weight_name, DType::kF8E4M3, {r.out_features, r.in_features}));
    const std::string scale_name = r.prefix + ".weight_scale";
    CROSSPOINT_ASSIGN_OR_RETURN(const TensorInfo* scale, t.require(scale_name));
    if (!is_float_weight_dtype(scale->dtype))
      return corrupt(scale->file + ": tensor " + scale_name + " has dtype " + std::string(dtype_name(scale->dtype)) +
                     ", expected f32, f16 or bf16");
    const int64_t num_scales = scale->num_elements();
    const bool per_channel =
        num_scales == r.out_features && scale->shape.size() >= 1 && scale->shape[0] == r.out_features;
    if (!per_channel && num_scales != 1)
      return corrupt(scale->file + ": tensor " + scale_name + " has shape " + shape_string(scale->shape) +
                     ", expected [" + std::to_string(r.out_features) + ", 1] (per channel) or [1] (per tensor)");
    std::vector<float> scales(static_cast<size_t>(r.out_features));
    for (int64_t n = 0; n < r.out_features; ++n) {
      scales[n] = load_weight(scale->data, scale->dtype, per_channel ? n : 0);
      if (!std::isfinite(scales[n]) || scales[n] < 0.0f)
        return corrupt(scale->file + ": tensor " + scale_name + " holds " + std::to_string(scales[n]) + " at row " +
                       std::to_string(n) + ", expected a finite non-negative scale");
    }
    float input_scale = 0.0f;
    if (q.fp8.static_input_scale) { CROSSPOINT_ASSIGN_OR_RETURN(input_scale, fused_input_scale(t, r.prefix)); }
    CROSSPOINT_ASSIGN_OR_RETURN(std::vector<float> bias, load_bias(r));
    return std::unique_ptr<LinearWeight>(new Fp8LinearWeight(weight->data, std::move(scales), std::move(bias),
                                                             r.out_features, r.in_features, input_scale));
  }
};

}  // namespace

std::shared_ptr<const LinearWeightFormat> fp8_linear_weight_format() {
  static const auto format = std::make_shared<const Fp8Format>();
  return format;
}

}  // namespace crosspoint
