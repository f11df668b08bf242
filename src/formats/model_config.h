// config.json of a Qwen2ForCausalLM or LlamaForCausalLM checkpoint, validated.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace crosspoint {

enum class Architecture { kLlama, kQwen2, kQwen3, kMistral };

// rope_scaling / rope_parameters: "llama3" (Llama 3.1+): the frequencies whose wavelength
// exceeds original_max_position_embeddings / low_freq_factor are divided by factor, those below
// ... / high_freq_factor kept, the ones between blended; "yarn" (Qwen2.5's long-context
// setting): frequencies blended between kept and divided by factor over a correction range of
// dimensions set by beta_fast / beta_slow, and cos/sin scaled by an attention factor
// (kernels/rope.h, scale_rope_yarn).
struct RopeScaling {
  std::string type = "default";  // "default", "llama3" or "yarn"
  double factor = 1.0;
  double low_freq_factor = 1.0;   // llama3
  double high_freq_factor = 4.0;  // llama3
  double original_max_position_embeddings = 0.0;
  double beta_fast = 32.0;        // yarn
  double beta_slow = 1.0;         // yarn
  bool truncate = true;           // yarn: the correction range rounded outwards to whole dimensions
  double attention_factor = 0.0;  // yarn: 0 = derived from factor (and mscale / mscale_all_dim)
  double mscale = 0.0;            // yarn
  double mscale_all_dim = 0.0;    // yarn
};

struct ModelConfig {
  Architecture architecture = Architecture::kLlama;
  std::string architecture_name;  // "LlamaForCausalLM" / "MistralForCausalLM" / "Qwen2ForCausalLM" / ...
  int64_t hidden_size = 0;        // d
  int64_t intermediate_size = 0;  // MLP width
  int64_t num_hidden_layers = 0;
  int64_t num_attention_heads = 0;
  int64_t num_key_value_heads = 0;  // GQA; equals num_attention_heads when absent
  int64_t head_dim = 0;             // "head_dim" if present, else hidden_size / num_attention_heads
  int64_t vocab_size = 0;
  int64_t max_position_embeddings = 0;  // capped at sliding_window when that is smaller
  // Mistral's attention window (0: none). Within it sliding-window attention is full causal
  // attention, so a config with a window serves up to that many positions, exactly.
  int64_t sliding_window = 0;
  double rope_theta = 10000.0;
  RopeScaling rope_scaling;  // rope_type "default" (none) or "llama3"
  double rms_norm_eps = 1e-6;
  bool tie_word_embeddings = false;
  bool attention_bias = false;         // q/k/v bias: always true for Qwen2, config flag for Llama and Qwen3
  bool qk_norm = false;                // Qwen3: RMSNorm over each head of q and of k before RoPE
  std::string torch_dtype;             // "float16", "bfloat16", "float32" (informational)
  std::vector<int64_t> eos_token_ids;  // may be several
  std::optional<int64_t> bos_token_id;
  // Raw "quantization_config" object as JSON text, empty when absent; parsed by the
  // quantisation loaders (GPTQ, compressed-tensors).
  std::string quantization_config_json;
  // quantization_config.kv_cache_scheme is set (compressed-tensors' FP8 KV cache with static
  // per-tensor scales, the only scheme accepted): every layer must carry self_attn.k_scale and
  // v_scale (checked by the model loader). Without config_groups the weights are dense.
  bool kv_cache_scheme = false;
};

// Reads DIR/config.json. Unknown architectures, missing or non-positive sizes, heads that
// do not divide, and unsupported activations are errors naming the file and field.
Result<ModelConfig> load_model_config(const std::string& model_dir);
Result<ModelConfig> parse_model_config(const std::string& json_text, const std::string& source_name);

}  // namespace crosspoint
