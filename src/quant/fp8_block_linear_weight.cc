#include "quant/fp8_block_linear_weight.h"

#include <cmath>

#include "kernels/fp8_block.h"
#include "kernels/weight_dtype.h"
#include "quant/quant_config.h"
#include "quant/tensor_checks.h"

namespace crosspoint {

Fp8BlockLinearWeight::Fp8BlockLinearWeight(const uint8_t* weight, std::vector<float> weight_scale, int64_t block_n,
                                           int64_t block_k, std::vector<float> bias, int64_t out_features,
                                           int64_t in_features)
    : weight_(weight),
      weight_scale_(std::move(weight_scale)),
      block_n_(block_n),
      block_k_(block_k),
      bias_(std::move(bias)),
      out_features_(out_features),
      in_features_(in_features) {}

Status Fp8BlockLinearWeight::forward(const float* x, int64_t num_rows, int64_t x_row_stride, float* y) const {
  Fp8BlockLinearArgs args;
  args.x = x;
  args.x_row_stride = x_row_stride;
  args.weight = weight_;
  args.weight_scale = weight_scale_.data();
  args.block_n = block_n_;
  args.block_k = block_k_;
  args.bias = bias_.empty() ? nullptr : bias_.data();
  args.y = y;
  args.num_rows = num_rows;
  args.in_features = in_features_;
  args.out_features = out_features_;
  return fp8_block_linear(args);
}

size_t Fp8BlockLinearWeight::weight_bytes() const {
  return static_cast<size_t>(out_features_) * in_features_ + (weight_scale_.size() + bias_.size()) * sizeof(float);
}

std::string Fp8BlockLinearWeight::format_name() const {
  return "w8a8-fp8-block" + std::to_string(block_n_) + "x" + std::to_string(block_k_);
}

namespace {

class Fp8BlockFormat final : public LinearWeightFormat {
 public:
  std::string name() const override { return "w8a8-fp8-block"; }
  bool matches(const ModelConfig& config) const override {
    return is_block_fp8_config(config.quantization_config_json);
  }
  Result<std::unique_ptr<LinearWeight>> load(const LinearWeightRequest& r) const override {
    CROSSPOINT_ASSIGN_OR_RETURN(QuantConfig q, parse_quant_config(r.config->quantization_config_json));
    if (q.scheme != QuantScheme::kFp8Block)
      return internal_error("block-wise FP8 format on a config parsed as another scheme");
    if (r.is_lm_head || q.is_ignored(r.prefix)) return load_dense_linear_weight(r);
    const SafetensorsModel& t = *r.tensors;
    const int64_t N = r.out_features, K = r.in_features, bn = q.fp8.block_n, bk = q.fp8.block_k;
    CROSSPOINT_ASSIGN_OR_RETURN(const TensorInfo* weight,
                                require_tensor(t, r.prefix + ".weight", DType::kF8E4M3, {N, K}));
    const std::string scale_name = r.prefix + "." + q.fp8.block_scale_name;
    const std::vector<int64_t> scale_shape = {(N + bn - 1) / bn, (K + bk - 1) / bk};
    CROSSPOINT_ASSIGN_OR_RETURN(const TensorInfo* scale, require_float_tensor(t, scale_name, scale_shape));
    std::vector<float> scales(static_cast<size_t>(scale_shape[0] * scale_shape[1]));
    for (size_t i = 0; i < scales.size(); ++i) {
      scales[i] = load_weight(scale->data, scale->dtype, static_cast<int64_t>(i));
      if (!std::isfinite(scales[i]) || scales[i] < 0.0f)
        return corrupt(scale->file + ": tensor " + scale_name + " holds " + std::to_string(scales[i]) + " at block " +
                       std::to_string(i) + ", expected a finite non-negative scale");
    }
    CROSSPOINT_ASSIGN_OR_RETURN(std::vector<float> bias, load_bias(r));
    return std::unique_ptr<LinearWeight>(
        new Fp8BlockLinearWeight(weight->data, std::move(scales), bn, bk, std::move(bias), N, K));
  }
};

}  // namespace

std::shared_ptr<const LinearWeightFormat> fp8_block_linear_weight_format() {
  static const auto format = std::make_shared<const Fp8BlockFormat>();
  return format;
}

}  // namespace crosspoint
