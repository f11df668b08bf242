// How a checkpoint's linear layers are read: one LinearWeightFormat per storage scheme.
// Dense (f32/f16/bf16) is built in; quantised formats live in src/quant and are handed to
// Model::load through ModelLoadOptions::linear_formats, so adding one never edits the model.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "formats/model_config.h"
#include "formats/safetensors.h"
#include "model/linear_weight.h"

namespace crosspoint {

// Everything a format needs to build one linear layer.
struct LinearWeightRequest {
  const SafetensorsModel* tensors = nullptr;
  const ModelConfig* config = nullptr;
  // Tensor name prefix: "model.layers.3.self_attn.q_proj" (then ".weight", ".bias",
  // ".weight_scale", ".qweight", ...), or "lm_head" / "model.embed_tokens" for the head.
  std::string prefix;
  int64_t in_features = 0;
  int64_t out_features = 0;
  bool has_bias = false;    // read prefix + ".bias" ([out_features])
  bool is_lm_head = false;  // quantised formats usually keep the head dense
};

class LinearWeightFormat {
 public:
  virtual ~LinearWeightFormat() = default;
  // "dense", "w8a8-fp8", "w4a16-gptq", for logs and errors.
  virtual std::string name() const = 0;
  // True when this format reads checkpoints described by config (its quantization_config).
  virtual bool matches(const ModelConfig& config) const = 0;
  // The layer, or an error naming the tensor whose presence, dtype or shape is wrong.
  virtual Result<std::unique_ptr<LinearWeight>> load(const LinearWeightRequest& request) const = 0;
};

// Reads prefix.weight [out, in] (f32/f16/bf16, zero copy) and prefix.bias [out].
Result<std::unique_ptr<LinearWeight>> load_dense_linear_weight(const LinearWeightRequest& request);

// The built-in dense format: matches configs without a quantization_config.
std::shared_ptr<const LinearWeightFormat> dense_linear_weight_format();

// The first of `formats` that matches config; with no match, dense when the config has no
// quantization_config, else an unsupported Status quoting the quantization method.
Result<std::shared_ptr<const LinearWeightFormat>> select_linear_weight_format(
    const ModelConfig& config, const std::vector<std::shared_ptr<const LinearWeightFormat>>& formats);

// A tensor of a float dtype with exactly `shape`, or a corrupt Status naming it.
Result<const TensorInfo*> require_float_tensor(const SafetensorsModel& tensors, const std::string& name,
                                               const std::vector<int64_t>& shape);

}  // namespace crosspoint
