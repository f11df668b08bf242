// Small helpers the quantised weight formats share to check a checkpoint's tensors and
// name the offending one in every error.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "formats/safetensors.h"
#include "model/linear_weight_format.h"

namespace crosspoint {

std::string shape_string(const std::vector<int64_t>& shape);

// The tensor `name` with exactly `dtype` and `shape`, or a not_found / corrupt Status
// naming the tensor and its file.
Result<const TensorInfo*> require_tensor(const SafetensorsModel& tensors, const std::string& name, DType dtype,
                                         const std::vector<int64_t>& shape);

// A weight scale per output channel ([N, 1] or [N]) or per tensor ([1], broadcast), as f32
// finite and >= 0, or an error naming the tensor.
Result<std::vector<float>> read_output_channel_scales(const SafetensorsModel& tensors, const std::string& scale_name,
                                                      int64_t out_features);

// One scale from a [1] or [] float tensor, finite and positive, or an error naming it.
Result<float> read_input_scale(const SafetensorsModel& tensors, const std::string& name);

// The static activation scale of `prefix` (its ".input_scale"): the largest of the layers the
// GPU runs as one linear with it (q/k/v_proj, gate/up_proj), so both devices quantise that
// input alike, as vLLM does.
Result<float> fused_input_scale(const SafetensorsModel& tensors, const std::string& prefix);

// request.prefix + ".bias" as f32 when request.has_bias, else empty.
Result<std::vector<float>> load_bias(const LinearWeightRequest& request);

// "gptq", "compressed-tensors", ... or "" when absent or unreadable.
std::string quant_method_of(const std::string& quantization_config_json);

// True for block-wise FP8 configs: quant_method "fp8" with a weight_block_size, or
// compressed-tensors with a config group whose weights have strategy "block".
bool is_block_fp8_config(const std::string& quantization_config_json);

// compressed-tensors' "format" ("float-quantized", "pack-quantized", ...) or "" when absent.
std::string compressed_tensors_format_of(const std::string& quantization_config_json);

}  // namespace crosspoint
