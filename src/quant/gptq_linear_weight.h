// W4A16 linear layers read from GPTQ int4 checkpoints (AutoGPTQ / GPTQModel layout):
//   prefix.qweight  I32 [K/8, N]            8 input rows per word, low nibble first
//   prefix.qzeros   I32 [groups, N/8]       zero points (v1 "gptq" stores z - 1)
//   prefix.scales   F16 [groups, N]         (bf16/f32 accepted and converted)
//   prefix.g_idx    I32 [K]                 group of each input row (optional when trivial)
//   prefix.bias     float [N]               when the layer has one
// groups = K / group_size (group_size -1: one group). Act-order layers have their rows
// sorted by group at load (see kernels/w4a16_linear.h); others point into the mmap.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "model/linear_weight.h"
#include "model/linear_weight_format.h"

namespace crosspoint {

class GptqLinearWeight final : public LinearWeight {
 public:
  struct Parts {
    const int32_t* qweight = nullptr;    // [K/8, N], rows sorted by group when k_perm is set
    std::vector<int32_t> owned_qweight;  // storage when qweight was re-laid-out or copied
    std::vector<uint16_t> scales;        // [groups, N] fp16
    std::vector<uint8_t> zeros;          // [groups, N] real zero points 0..16
    std::vector<int32_t> k_perm;         // [K] or empty
    std::vector<float> bias;             // [N] or empty
    int64_t in_features = 0;
    int64_t out_features = 0;
    int64_t group_size = 0;  // resolved: K when the config says -1
  };
  explicit GptqLinearWeight(Parts parts);

  Status forward(const float* x, int64_t num_rows, int64_t x_row_stride, float* y) const override;
  int64_t in_features() const override { return p_.in_features; }
  int64_t out_features() const override { return p_.out_features; }
  size_t weight_bytes() const override;
  std::string format_name() const override;
  LinearWeightView view() const override;

  // W[k, n] in checkpoint row order as f32: [K, N] (for tests and for eval's weight diffs).
  std::vector<float> dequantize() const;

 private:
  Parts p_;
};

// Act-order: when the checkpoint holds `g_idx_name` ([K] int32, the group of each input row)
// and it is not k / group_size, sorts parts' qweight rows by group (a copy) and records
// k_perm. parts must hold qweight, in/out features and the resolved group size.
Status sort_rows_by_g_idx(const SafetensorsModel& tensors, const std::string& g_idx_name,
                          GptqLinearWeight::Parts& parts);

// The GPTQ format: matches quant_method "gptq"; load() validates the quantization_config
// (4 bits, group size dividing K) and each layer's tensors.
std::shared_ptr<const LinearWeightFormat> gptq_linear_weight_format();

// Every quantised format (GPTQ, compressed-tensors W4A16 and FP8, AWQ, block-wise FP8, W8A8-INT8), for
// ModelLoadOptions::linear_formats: a checkpoint's config.json decides which one (if any) applies.
std::vector<std::shared_ptr<const LinearWeightFormat>> quantized_linear_weight_formats();

}  // namespace crosspoint
