// The quantization_config of a checkpoint's config.json, parsed and checked: which of the
// two supported schemes it is and its parameters. Anything else is refused here, with a
// message naming the field, before a single tensor is read.
//   GPTQ (AutoGPTQ / GPTQModel):  quant_method "gptq", bits 4, group_size (-1 or > 0),
//                                 desc_act, sym, checkpoint_format "gptq" (v1) | "gptq_v2"
//   compressed-tensors FP8-dynamic: quant_method "compressed-tensors", format
//                                 "float-quantized", one config group with weights
//                                 {8-bit float, channel (or tensor), symmetric, static} and
//                                 input_activations {8-bit float, token, symmetric, dynamic}
// Layouts: ../shared/docs/reference/checkpoint-formats.md and docs/quantization.md.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace crosspoint {

enum class QuantScheme {
  kNone,        // no quantization_config: dense f32/f16/bf16
  kGptqInt4,    // W4A16
  kFp8Dynamic,  // W8A8-FP8, compressed-tensors
};

struct GptqConfig {
  int64_t bits = 4;
  int64_t group_size = 128;  // -1: one group over all input features
  bool desc_act = false;     // act-order; g_idx then permutes groups
  bool sym = true;
  bool zero_point_minus_one = true;  // checkpoint_format "gptq" (v1) stores z - 1
  bool static_groups = false;        // informational: group parameters fixed before GPTQ (g_idx then contiguous)
};

struct Fp8Config {
  bool per_channel_weight_scale = true;  // "channel": [N, 1]; false for "tensor": [1]
  // Module names (or "re:<regex>") kept unquantised, e.g. "lm_head".
  std::vector<std::string> ignore;
};

struct QuantConfig {
  QuantScheme scheme = QuantScheme::kNone;
  GptqConfig gptq;
  Fp8Config fp8;

  // True when module `name` ("model.layers.0.mlp.down_proj", "lm_head") stays dense.
  bool is_ignored(const std::string& name) const;
};

// Parses the raw quantization_config object (empty text = kNone). `source` names the file
// in error messages.
Result<QuantConfig> parse_quant_config(const std::string& json_text, const std::string& source = "config.json");

// The quantization_config objects crosspoint writes (the same keys the reference tools
// write), as JSON text.
std::string gptq_quantization_config_json(const GptqConfig& config, double damp_percent, bool true_sequential);
std::string fp8_dynamic_quantization_config_json(const Fp8Config& config);

}  // namespace crosspoint
