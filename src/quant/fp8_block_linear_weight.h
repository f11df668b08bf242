// Block-wise W8A8-FP8 linear layers (kernels/fp8_block.h has the math):
//   quant_method "fp8" + weight_block_size (Qwen3 / DeepSeek *-FP8, transformers'
//   FineGrainedFP8Config):
//     prefix.weight            F8_E4M3 [N, K]
//     prefix.weight_scale_inv  f32/bf16 [ceil(N / bn), ceil(K / bk)]   the dequantisation scale
//   compressed-tensors FP8_BLOCK: the same with prefix.weight_scale.
// The head and modules_to_not_convert / ignore stay dense. On the GPU, 128 x 128 blocks run
// through fp8_block_linear_from_fp16 (kernels/cuda/linear.h); other blocks are refused by name.
#pragma once

#include <memory>
#include <vector>

#include "model/linear_weight.h"
#include "model/linear_weight_format.h"

namespace crosspoint {

class Fp8BlockLinearWeight final : public LinearWeight {
 public:
  Fp8BlockLinearWeight(const uint8_t* weight, std::vector<float> weight_scale, int64_t block_n, int64_t block_k,
                       std::vector<float> bias, int64_t out_features, int64_t in_features);

  Status forward(const float* x, int64_t num_rows, int64_t x_row_stride, float* y) const override;
  int64_t in_features() const override { return in_features_; }
  int64_t out_features() const override { return out_features_; }
  size_t weight_bytes() const override;
  std::string format_name() const override;
  LinearWeightView view() const override {
    return {Fp8BlockWeightStorage{weight_, weight_scale_.data(), block_n_, block_k_},
            bias_.empty() ? nullptr : bias_.data()};
  }

 private:
  const uint8_t* weight_;            // [out_features, in_features] e4m3, not owned
  std::vector<float> weight_scale_;  // [ceil(N / block_n), ceil(K / block_k)] f32
  int64_t block_n_;
  int64_t block_k_;
  std::vector<float> bias_;
  int64_t out_features_;
  int64_t in_features_;
};

// Matches block-wise FP8 configs (quant_config.h's is_block_fp8_config).
std::shared_ptr<const LinearWeightFormat> fp8_block_linear_weight_format();

}  // namespace crosspoint
