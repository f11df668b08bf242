// The quantization_config of a checkpoint's config.json, parsed and checked: which of the
// supported schemes it is and its parameters. Anything else is refused here, with a
// message naming the field, before a single tensor is read.
//   GPTQ (AutoGPTQ / GPTQModel):  quant_method "gptq", bits 4, group_size (-1 or > 0),
//                                 desc_act, sym, checkpoint_format "gptq" (v1) | "gptq_v2"
//   compressed-tensors FP8-dynamic: quant_method "compressed-tensors", format
//                                 "float-quantized", config groups with weights
//                                 {8-bit float, channel (or tensor), symmetric, static} and
//                                 input_activations {8-bit float, symmetric, token and dynamic,
//                                 or tensor and static (a calibrated input_scale per layer)}
//   compressed-tensors W4A16:     format "pack-quantized" (llm-compressor's W4A16 presets),
//                                 config groups with weights {4-bit int, group or channel,
//                                 symmetric or not, static, actorder any} and no activations
//   AWQ (AutoAWQ):                quant_method "awq", bits 4, group_size, zero_point true,
//                                 version "gemm"
//   Block-wise FP8:               quant_method "fp8" with weight_block_size [bn, bk] and
//                                 activation_scheme "dynamic" (Qwen3 / DeepSeek *-FP8), or
//                                 compressed-tensors weights {float 8, "block", block_structure}
//                                 with input_activations {float 8, "group", group_size bk, dynamic}
//   compressed-tensors W8A8-INT8: format "int-quantized", weights {8-bit int, channel or tensor,
//                                 symmetric, static}, input_activations {8-bit int, symmetric,
//                                 token and dynamic, or tensor and static}
//   Per-tensor FP8 (vLLM "fp8"):  quant_method "fp8" without weight_block_size; activation_scheme
//                                 "dynamic" (per token) or "static" (input_scale)
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
  kPackedInt4,  // W4A16, compressed-tensors pack-quantized
  kAwqInt4,     // W4A16, AutoAWQ's GEMM layout
  kFp8Block,    // W8A8-FP8 with 2-D weight blocks and per-token-group activations
  kInt8,        // W8A8-INT8, compressed-tensors int-quantized
};

// The parameters of every W4A16 scheme (GPTQ, pack-quantized, AWQ); the field names are GPTQ's.
struct GptqConfig {
  int64_t bits = 4;
  int64_t group_size = 128;  // -1: one group over all input features
  bool desc_act = false;     // act-order; g_idx then permutes groups (pack-quantized: actorder "group")
  bool sym = true;
  bool zero_point_minus_one = true;  // checkpoint_format "gptq" (v1) stores z - 1
  bool static_groups = false;        // informational: group parameters fixed before GPTQ (g_idx then contiguous)
};

struct Fp8Config {
  bool per_channel_weight_scale = true;  // "channel": [N, 1]; false for "tensor": [1]
  bool static_input_scale = false;       // input_activations {"tensor", static}: prefix.input_scale
  // kFp8Block: weight tiles of block_n x block_k and their scale tensor's name ("weight_scale"
  // in compressed-tensors, "weight_scale_inv" in quant_method "fp8" checkpoints).
  int64_t block_n = 0;
  int64_t block_k = 0;
  std::string block_scale_name = "weight_scale";
};

// kInt8: the activation side (weights are per channel or per tensor, read from the tensor).
struct Int8Config {
  bool static_input_scale = false;  // input_activations {"tensor", static}: prefix.input_scale
};

struct QuantConfig {
  QuantScheme scheme = QuantScheme::kNone;
  GptqConfig gptq;  // kGptqInt4, kPackedInt4, kAwqInt4
  Fp8Config fp8;
  Int8Config int8;
  // compressed-tensors: module names (or "re:<regex>") kept unquantised, e.g. "lm_head".
  std::vector<std::string> ignore;
  // AWQ's modules_to_not_convert: a module stays dense when its name contains one of these.
  std::vector<std::string> ignore_containing;
  // compressed-tensors' config_groups targets: "Linear", module names or "re:<regex>".
  // Empty: every linear.
  std::vector<std::string> targets;

  // True when module `name` ("model.layers.0.mlp.down_proj", "lm_head") stays dense.
  bool is_ignored(const std::string& name) const;
};

// Parses the raw quantization_config object (empty text = kNone). `source` names the file
// in error messages.
Result<QuantConfig> parse_quant_config(const std::string& json_text, const std::string& source = "config.json");

// The quantization_config objects crosspoint writes (the same keys the reference tools
// write), as JSON text.
std::string gptq_quantization_config_json(const GptqConfig& config, double damp_percent, bool true_sequential);
std::string fp8_dynamic_quantization_config_json(const Fp8Config& config, const std::vector<std::string>& ignore);
// llm-compressor's W8A8 preset (int8 per-channel weights, dynamic per-token int8 activations).
std::string int8_dynamic_quantization_config_json(const std::vector<std::string>& ignore);

}  // namespace crosspoint
