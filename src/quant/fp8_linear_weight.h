// W8A8-FP8 linear layers read from compressed-tensors "float-quantized" checkpoints:
//   prefix.weight        F8_E4M3 [N, K]        (HF orientation, zero copy from the mmap)
//   prefix.weight_scale  f32/f16/bf16 [N, 1] or [N] per channel ([1] or [] per tensor)
//   prefix.input_scale   f32/f16/bf16 [1] or []: static activations only (FP8 presets with
//                        input_activations {strategy "tensor", dynamic false}); the layers
//                        the GPU fuses (q/k/v, gate/up) take their largest, as vLLM does
//   prefix.bias          float [N] when the layer has one
// Layers named in quantization_config.ignore (lm_head) are loaded dense.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "model/linear_weight.h"
#include "model/linear_weight_format.h"

namespace crosspoint {

class Fp8LinearWeight final : public LinearWeight {
 public:
  // input_scale > 0: static per-tensor activation scale; 0: per-token dynamic.
  Fp8LinearWeight(const uint8_t* weight, std::vector<float> weight_scale, std::vector<float> bias, int64_t out_features,
                  int64_t in_features, float input_scale = 0.0f);

  Status forward(const float* x, int64_t num_rows, int64_t x_row_stride, float* y) const override;
  int64_t in_features() const override { return in_features_; }
  int64_t out_features() const override { return out_features_; }
  size_t weight_bytes() const override;
  std::string format_name() const override { return input_scale_ > 0.0f ? "w8a8-fp8-static" : "w8a8-fp8"; }
  LinearWeightView view() const override {
    return {Fp8WeightStorage{weight_, weight_scale_.data(), input_scale_}, bias_.empty() ? nullptr : bias_.data()};
  }

 private:
  const uint8_t* weight_;            // [out_features, in_features] e4m3, not owned
  std::vector<float> weight_scale_;  // [out_features] f32
  std::vector<float> bias_;          // [out_features] f32, or empty
  int64_t out_features_;
  int64_t in_features_;
  float input_scale_;
};

// The compressed-tensors FP8-dynamic format: matches quant_method "compressed-tensors";
// load() validates the whole quantization_config and each layer's tensors.
std::shared_ptr<const LinearWeightFormat> fp8_linear_weight_format();

}  // namespace crosspoint
