// The Qwen2 / Llama decoder on the CPU: loads a Hugging Face directory (config.json +
// safetensors, weights kept in their stored dtype and read straight from the mmap) and runs
// one ForwardBatch at a time against a paged KV cache.
//
//   h = embed(tokens)                                          [num_tokens, d]
//   per layer: h += o_proj(attn(rope(q), rope(k), v))  of rms_norm(h)
//              h += down_proj(silu(gate_proj(x)) * up_proj(x)),  x = rms_norm(h)
//   logits = lm_head(rms_norm(h[logits_token_idx]))            [num_logits, vocab]
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "formats/model_config.h"
#include "formats/safetensors.h"
#include "model/forward_batch.h"
#include "model/kv_cache.h"
#include "model/linear_weight.h"
#include "model/linear_weight_format.h"
#include "model/tensor_parallel_plan.h"

namespace crosspoint {

// The type activations are held in between kernels (ModelLoadOptions::activation_dtype).
enum class ActivationDtype { kFloat32, kFloat16, kBFloat16 };
// "float32", "float16", "bfloat16": the --dtype names.
const char* activation_dtype_name(ActivationDtype dtype);

struct ModelLoadOptions {
  // Extra weight formats (quantised schemes) tried before the built-in dense one.
  std::vector<std::shared_ptr<const LinearWeightFormat>> linear_formats;
  // kFloat16 / kBFloat16: round every activation to that type where the GPU model stores it (norm
  // outputs, q/k/v, attention output, each linear's output, SiLU·mul, logits; the residual stays
  // f32 as on the GPU): the GPU's dtype flow computed on the CPU (--dtype float16 / bfloat16), a
  // reference for GPU results. kFloat32: no rounding (the CPU's own flow).
  ActivationDtype activation_dtype = ActivationDtype::kFloat32;
  // Not 0: every activation above is first moved one f32 ulp up or down (chosen by a hash of this
  // seed, the place and the element), a stand-in for another implementation's f32 rounding
  // (summation order, library exp): how much a precision's results depend on such noise
  // (tests/quant/test_activation_noise.cc, docs/quantization.md, "GPU against CPU").
  uint64_t activation_noise_seed = 0;
};

struct DecoderLayerWeights {
  const TensorInfo* input_norm = nullptr;           // [d] input_layernorm.weight
  const TensorInfo* post_attention_norm = nullptr;  // [d] post_attention_layernorm.weight
  const TensorInfo* q_norm = nullptr;               // [head_dim] self_attn.q_norm.weight (Qwen3), else null
  const TensorInfo* k_norm = nullptr;               // [head_dim] self_attn.k_norm.weight (Qwen3), else null
  std::unique_ptr<LinearWeight> q_proj;             // d -> num_heads * head_dim (+ bias for Qwen2)
  std::unique_ptr<LinearWeight> k_proj;             // d -> num_kv_heads * head_dim
  std::unique_ptr<LinearWeight> v_proj;             // d -> num_kv_heads * head_dim
  std::unique_ptr<LinearWeight> o_proj;             // num_heads * head_dim -> d
  std::unique_ptr<LinearWeight> gate_proj;          // d -> intermediate
  std::unique_ptr<LinearWeight> up_proj;            // d -> intermediate
  std::unique_ptr<LinearWeight> down_proj;          // intermediate -> d
  // An fp8 KV cache's per-tensor scales: self_attn.k_scale / v_scale when the checkpoint has
  // them (compressed-tensors' kv_cache_scheme), else 1 as vLLM defaults them.
  float k_scale = 1.0f;
  float v_scale = 1.0f;
};

// What one tensor-parallel rank runs of the decoder (the whole model at one rank): its share of
// every linear and of the heads, and where its layers sit in the KV cache.
struct RankLayerLinears {
  const LinearWeight* q_proj = nullptr;
  const LinearWeight* k_proj = nullptr;
  const LinearWeight* v_proj = nullptr;
  const LinearWeight* o_proj = nullptr;  // input rows of the rank's heads; outputs summed over ranks
  const LinearWeight* gate_proj = nullptr;
  const LinearWeight* up_proj = nullptr;
  const LinearWeight* down_proj = nullptr;  // input rows of the rank's intermediate run; summed
};
struct RankShare {
  std::vector<RankLayerLinears> layers;
  const LinearWeight* lm_head = nullptr;
  IndexRange vocab;  // the logits columns lm_head writes
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t intermediate = 0;
  // The KV cache holds every rank's layers: this rank's layer l is the cache's layer
  // first_cache_layer + l, of num_cache_layers.
  int32_t first_cache_layer = 0;
  int32_t num_cache_layers = 0;
  // Sums n floats over the ranks in place, the same result on every rank; empty at one rank.
  std::function<void(float* data, int64_t n)> all_reduce;
};

class Model {
 public:
  // Reads DIR/config.json and DIR's safetensors; checks every tensor's presence, dtype and
  // shape against the config (errors name the tensor and file).
  static Result<std::unique_ptr<Model>> load(const std::string& model_dir, const ModelLoadOptions& options = {});

  // Writes K/V of batch's tokens into kv_cache and the logits of batch.logits_token_idx
  // into logits: [num_logits, vocab_size] f32. The cache must come from kv_cache_shape().
  // Not reentrant (one forward at a time); kernels use the global thread pool.
  Status forward(const ForwardBatch& batch, CpuKvCache& kv_cache, float* logits) const;
  // The same for one rank of a tensor-parallel model (TensorParallelModel): writes the rank's
  // K/V heads and its vocabulary columns of logits (rows vocab_size apart).
  Status forward_share(const ForwardBatch& batch, CpuKvCache& kv_cache, const RankShare& share, float* logits) const;
  // The whole model as one rank's share.
  const RankShare& whole_share() const { return whole_; }

  const ModelConfig& config() const { return config_; }
  int32_t vocab_size() const { return static_cast<int32_t>(config_.vocab_size); }
  // The cache shape this model needs for num_blocks blocks of block_size tokens.
  KvCacheShape kv_cache_shape(int32_t num_blocks, int32_t block_size = 16) const;
  // The cache shape with its element type: kF32, or kF8E4M3 for --kv-cache-dtype fp8.
  KvCacheShape kv_cache_shape(int32_t num_blocks, int32_t block_size, DType kv_dtype) const;
  // K and V of one token across all layers in the CPU cache (f32, or e4m3 for an fp8 cache).
  size_t kv_bytes_per_token(DType kv_dtype = DType::kF32) const;
  // Whether the checkpoint carried the fp8 KV cache's scales (self_attn.k_scale / v_scale).
  bool has_kv_scales() const { return has_kv_scales_; }
  ActivationDtype activation_dtype() const { return activation_dtype_; }
  // Bytes of weights read per decode step: every linear (incl. lm_head) and norm, plus one
  // embedding row; the roofline's W.
  size_t weight_bytes_per_token() const;
  // Bytes of all weights held (embedding table counted once even when tied).
  size_t weight_bytes_total() const;
  // "f16", "bf16", "w4a16-g128", ... of the transformer-block linears.
  std::string weight_format_name() const;

  // Read-only views of the loaded weights, for other backends (the CUDA model uploads
  // from them): the checkpoint's tensors, each layer's linears and norms, the head.
  const SafetensorsModel& tensors() const { return *tensors_; }
  const std::vector<DecoderLayerWeights>& layers() const { return layers_; }
  const TensorInfo& embed_tokens() const { return *embed_tokens_; }
  const TensorInfo& final_norm() const { return *final_norm_; }
  const LinearWeight& lm_head() const { return *lm_head_; }
  // [head_dim / 2] f32 RoPE inverse frequencies, as the CPU forward uses them.
  const std::vector<float>& rope_inverse_frequencies() const { return rope_inv_freq_; }
  float rope_attention_scaling() const { return rope_attention_scaling_; }  // YaRN's factor on cos/sin, else 1

 private:
  Model() = default;
  Status load_weights(const ModelLoadOptions& options);
  Status run_layer(int32_t layer_idx, const ForwardBatch& batch, CpuKvCache& kv_cache, const RankShare& share,
                   float* hidden) const;

  std::string dir_;
  ModelConfig config_;
  std::unique_ptr<SafetensorsModel> tensors_;
  const TensorInfo* embed_tokens_ = nullptr;  // [vocab, d]
  const TensorInfo* final_norm_ = nullptr;    // [d]
  std::vector<DecoderLayerWeights> layers_;
  std::unique_ptr<LinearWeight> lm_head_;  // d -> vocab (the embedding table when tied)
  std::vector<float> rope_inv_freq_;       // [head_dim / 2] f32
  float rope_attention_scaling_ = 1.0f;
  bool has_kv_scales_ = false;
  ActivationDtype activation_dtype_ = ActivationDtype::kFloat32;  // ModelLoadOptions::activation_dtype
  uint64_t activation_noise_seed_ = 0;                            // ModelLoadOptions::activation_noise_seed
  RankShare whole_;
};

}  // namespace crosspoint
