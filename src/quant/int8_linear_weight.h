// W8A8-INT8 linear layers read from compressed-tensors "int-quantized" checkpoints
// (llm-compressor's W8A8 presets, SmoothQuant-style models; kernels/int8.h has the math):
//   prefix.weight        I8 [N, K]                 (HF orientation, zero copy from the mmap)
//   prefix.weight_scale  f32/f16/bf16 [N, 1] or [N] per channel ([1] or [] per tensor)
//   prefix.input_scale   one float: static activations only (input_activations {"tensor",
//                        static}); fused q/k/v and gate/up take their largest, as vLLM does
//   prefix.bias          float [N] when the layer has one
// Layers named in quantization_config.ignore (lm_head) are loaded dense. On the GPU the same
// weights run through int8_linear_from_fp16 (kernels/cuda/linear.h).
#pragma once

#include <memory>
#include <vector>

#include "model/linear_weight.h"
#include "model/linear_weight_format.h"

namespace crosspoint {

class Int8LinearWeight final : public LinearWeight {
 public:
  Int8LinearWeight(const int8_t* weight, std::vector<float> weight_scale, std::vector<float> bias, int64_t out_features,
                   int64_t in_features, float input_scale);

  Status forward(const float* x, int64_t num_rows, int64_t x_row_stride, float* y) const override;
  int64_t in_features() const override { return in_features_; }
  int64_t out_features() const override { return out_features_; }
  size_t weight_bytes() const override;
  std::string format_name() const override { return input_scale_ > 0.0f ? "w8a8-int8-static" : "w8a8-int8"; }
  LinearWeightView view() const override {
    return {Int8WeightStorage{weight_, weight_scale_.data(), input_scale_}, bias_.empty() ? nullptr : bias_.data()};
  }

 private:
  const int8_t* weight_;             // [out_features, in_features], not owned
  std::vector<float> weight_scale_;  // [out_features] f32
  std::vector<float> bias_;          // [out_features] f32, or empty
  int64_t out_features_;
  int64_t in_features_;
  float input_scale_;
};

// Matches quant_method "compressed-tensors" with format "int-quantized".
std::shared_ptr<const LinearWeightFormat> int8_linear_weight_format();

}  // namespace crosspoint
