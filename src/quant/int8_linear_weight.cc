#include "quant/int8_linear_weight.h"

#include "kernels/int8.h"
#include "quant/quant_config.h"
#include "quant/tensor_checks.h"

namespace crosspoint {

Int8LinearWeight::Int8LinearWeight(const int8_t* weight, std::vector<float> weight_scale, std::vector<float> bias,
                                   int64_t out_features, int64_t in_features, float input_scale)
    : weight_(weight),
      weight_scale_(std::move(weight_scale)),
      bias_(std::move(bias)),
      out_features_(out_features),
      in_features_(in_features),
      input_scale_(input_scale) {}

Status Int8LinearWeight::forward(const float* x, int64_t num_rows, int64_t x_row_stride, float* y) const {
  Int8LinearArgs args;
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
  return int8_linear(args);
}

size_t Int8LinearWeight::weight_bytes() const {
  return static_cast<size_t>(out_features_) * in_features_ + (weight_scale_.size() + bias_.size()) * sizeof(float);
}

namespace {

class Int8Format final : public LinearWeightFormat {
 public:
  std::string name() const override { return "w8a8-int8"; }
  bool matches(const ModelConfig& config) const override {
    return quant_method_of(config.quantization_config_json) == "compressed-tensors" &&
           compressed_tensors_format_of(config.quantization_config_json) == "int-quantized";
  }
  Result<std::unique_ptr<LinearWeight>> load(const LinearWeightRequest& r) const override {
    CROSSPOINT_ASSIGN_OR_RETURN(QuantConfig q, parse_quant_config(r.config->quantization_config_json));
    if (r.is_lm_head || q.is_ignored(r.prefix)) return load_dense_linear_weight(r);
    const SafetensorsModel& t = *r.tensors;
    CROSSPOINT_ASSIGN_OR_RETURN(const TensorInfo* weight,
                                require_tensor(t, r.prefix + ".weight", DType::kI8, {r.out_features, r.in_features}));
    CROSSPOINT_ASSIGN_OR_RETURN(std::vector<float> scales,
                                read_output_channel_scales(t, r.prefix + ".weight_scale", r.out_features));
    float input_scale = 0.0f;
    if (q.int8.static_input_scale) { CROSSPOINT_ASSIGN_OR_RETURN(input_scale, fused_input_scale(t, r.prefix)); }
    CROSSPOINT_ASSIGN_OR_RETURN(std::vector<float> bias, load_bias(r));
    return std::unique_ptr<LinearWeight>(new Int8LinearWeight(reinterpret_cast<const int8_t*>(weight->data),
                                                              std::move(scales), std::move(bias), r.out_features,
                                                              r.in_features, input_scale));
  }
};

}  // namespace

std::shared_ptr<const LinearWeightFormat> int8_linear_weight_format() {
  static const auto format = std::make_shared<const Int8Format>();
  return format;
}

}  // namespace crosspoint
