#include "model/model.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "common/mix64.h"
#include "kernels/embedding.h"
#include "kernels/f16_rounding.h"
#include "kernels/paged_attention.h"
#include "kernels/residual_add.h"
#include "kernels/rms_norm.h"
#include "kernels/rope.h"
#include "kernels/silu_mul.h"

namespace crosspoint {

const char* activation_dtype_name(ActivationDtype dtype) {
  switch (dtype) {
    case ActivationDtype::kFloat32: return "float32";
    case ActivationDtype::kFloat16: return "float16";
    case ActivationDtype::kBFloat16: return "bfloat16";
  }
  return "?";
}

Result<std::unique_ptr<Model>> Model::load(const std::string& model_dir, const ModelLoadOptions& options) {
  std::unique_ptr<Model> model(new Model());
  model->dir_ = model_dir;
  model->activation_dtype_ = options.activation_dtype;
  model->activation_noise_seed_ = options.activation_noise_seed;
  CROSSPOINT_ASSIGN_OR_RETURN(model->config_, load_model_config(model_dir));
  CROSSPOINT_ASSIGN_OR_RETURN(model->tensors_, SafetensorsModel::open_dir(model_dir));
  CROSSPOINT_RETURN_IF_ERROR(model->load_weights(options));
  model->rope_inv_freq_ = rope_inv_freq(model->config_.head_dim, model->config_.rope_theta);
  if (const RopeScaling& r = model->config_.rope_scaling; r.type == "llama3") {
    scale_rope_llama3(model->rope_inv_freq_, r.factor, r.low_freq_factor, r.high_freq_factor,
                      r.original_max_position_embeddings);
  } else if (r.type == "yarn") {
    YarnParameters y;
    y.factor = r.factor;
    y.original_max_position = r.original_max_position_embeddings;
    y.beta_fast = r.beta_fast;
    y.beta_slow = r.beta_slow;
    y.truncate = r.truncate;
    y.attention_factor = r.attention_factor;
    y.mscale = r.mscale;
    y.mscale_all_dim = r.mscale_all_dim;
    model->rope_attention_scaling_ =
        scale_rope_yarn(model->rope_inv_freq_, model->config_.head_dim, model->config_.rope_theta, y);
  }
  return model;
}

namespace {

// An fp8 KV cache scale stored as a one-element float tensor; positive and finite.
Result<float> kv_scale_value(const TensorInfo& t) {
  if (t.num_elements() != 1) return corrupt(t.file + ": tensor " + t.name + " must hold one element");
  float value = 0;
  if (t.dtype == DType::kF32) {
    std::memcpy(&value, t.data, sizeof value);
  } else if (t.dtype == DType::kF16 || t.dtype == DType::kBF16) {
    uint16_t half = 0;
    std::memcpy(&half, t.data, sizeof half);
    value = t.dtype == DType::kF16 ? f16_to_f32(half) : bf16_to_f32(half);
  } else {
    return corrupt(t.file + ": tensor " + t.name + " must be f32, f16 or bf16, not " +
                   std::string(dtype_name(t.dtype)));
  }
  if (!(value > 0) || !std::isfinite(value))
    return corrupt(t.file + ": tensor " + t.name + " = " + std::to_string(value) + " is not a positive finite scale");
  return value;
}

}  // namespace

Status Model::load_weights(const ModelLoadOptions& options) {
  const ModelConfig& c = config_;
  CROSSPOINT_ASSIGN_OR_RETURN(auto format, select_linear_weight_format(c, options.linear_formats));
  const int64_t d = c.hidden_size, D = c.head_dim, q_dim = c.num_attention_heads * D,
                kv_dim = c.num_key_value_heads * D;
  CROSSPOINT_ASSIGN_OR_RETURN(embed_tokens_,
                              require_float_tensor(*tensors_, "model.embed_tokens.weight", {c.vocab_size, d}));
  CROSSPOINT_ASSIGN_OR_RETURN(final_norm_, require_float_tensor(*tensors_, "model.norm.weight", {d}));

  auto linear = [&](const std::string& prefix, int64_t in, int64_t out, bool bias) {
    LinearWeightRequest request;
    request.tensors = tensors_.get();
    request.config = &config_;
    request.prefix = prefix;
    request.in_features = in;
    request.out_features = out;
    request.has_bias = bias;
    return format->load(request);
  };
  layers_.resize(c.num_hidden_layers);
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    DecoderLayerWeights& layer = layers_[i];
    CROSSPOINT_ASSIGN_OR_RETURN(layer.input_norm, require_float_tensor(*tensors_, p + "input_layernorm.weight", {d}));
    CROSSPOINT_ASSIGN_OR_RETURN(layer.post_attention_norm,
                                require_float_tensor(*tensors_, p + "post_attention_layernorm.weight", {d}));
    if (c.qk_norm) {
      CROSSPOINT_ASSIGN_OR_RETURN(layer.q_norm, require_float_tensor(*tensors_, p + "self_attn.q_norm.weight", {D}));
      CROSSPOINT_ASSIGN_OR_RETURN(layer.k_norm, require_float_tensor(*tensors_, p + "self_attn.k_norm.weight", {D}));
    }
    CROSSPOINT_ASSIGN_OR_RETURN(layer.q_proj, linear(p + "self_attn.q_proj", d, q_dim, c.attention_bias));
    CROSSPOINT_ASSIGN_OR_RETURN(layer.k_proj, linear(p + "self_attn.k_proj", d, kv_dim, c.attention_bias));
    CROSSPOINT_ASSIGN_OR_RETURN(layer.v_proj, linear(p + "self_attn.v_proj", d, kv_dim, c.attention_bias));
    CROSSPOINT_ASSIGN_OR_RETURN(layer.o_proj, linear(p + "self_attn.o_proj", q_dim, d, false));
    CROSSPOINT_ASSIGN_OR_RETURN(layer.gate_proj, linear(p + "mlp.gate_proj", d, c.intermediate_size, false));
    CROSSPOINT_ASSIGN_OR_RETURN(layer.up_proj, linear(p + "mlp.up_proj", d, c.intermediate_size, false));
    CROSSPOINT_ASSIGN_OR_RETURN(layer.down_proj, linear(p + "mlp.down_proj", c.intermediate_size, d, false));
    const TensorInfo* k_scale = tensors_->find(p + "self_attn.k_scale");
    const TensorInfo* v_scale = tensors_->find(p + "self_attn.v_scale");
    if ((k_scale == nullptr) != (v_scale == nullptr))
      return corrupt(dir_ + ": layer " + std::to_string(i) + " has one of self_attn.k_scale and v_scale, not both");
    if (k_scale != nullptr) {
      CROSSPOINT_ASSIGN_OR_RETURN(layer.k_scale, kv_scale_value(*k_scale));
      CROSSPOINT_ASSIGN_OR_RETURN(layer.v_scale, kv_scale_value(*v_scale));
      has_kv_scales_ = true;
    } else if (c.kv_cache_scheme) {  // compressed-tensors' FP8 KV cache: its scales in every layer
      return corrupt(dir_ + ": quantization_config.kv_cache_scheme is set but layer " + std::to_string(i) +
                     " has no self_attn.k_scale / v_scale");
    }
  }

  // Tied checkpoints may omit lm_head.weight (HF reuses the embedding), or carry a copy.
  LinearWeightRequest head;
  head.tensors = tensors_.get();
  head.config = &config_;
  head.in_features = d;
  head.out_features = c.vocab_size;
  head.is_lm_head = true;
  head.prefix =
      (c.tie_word_embeddings || tensors_->find("lm_head.weight") == nullptr) ? "model.embed_tokens" : "lm_head";
  if (!c.tie_word_embeddings && head.prefix != "lm_head")
    return not_found(dir_ + ": tensor lm_head.weight is missing and config.json has tie_word_embeddings false");
  CROSSPOINT_ASSIGN_OR_RETURN(lm_head_, format->load(head));

  whole_.num_heads = c.num_attention_heads;
  whole_.num_kv_heads = c.num_key_value_heads;
  whole_.intermediate = c.intermediate_size;
  whole_.num_cache_layers = static_cast<int32_t>(c.num_hidden_layers);
  whole_.lm_head = lm_head_.get();
  whole_.vocab = {0, c.vocab_size};
  for (const DecoderLayerWeights& l : layers_)
    whole_.layers.push_back({l.q_proj.get(), l.k_proj.get(), l.v_proj.get(), l.o_proj.get(), l.gate_proj.get(),
                             l.up_proj.get(), l.down_proj.get()});
  return Status::ok();
}

KvCacheShape Model::kv_cache_shape(int32_t num_blocks, int32_t block_size) const {
  KvCacheShape shape;
  shape.num_layers = static_cast<int32_t>(config_.num_hidden_layers);
  shape.num_blocks = num_blocks;
  shape.block_size = block_size;
  shape.num_kv_heads = static_cast<int32_t>(config_.num_key_value_heads);
  shape.head_dim = static_cast<int32_t>(config_.head_dim);
  return shape;
}

KvCacheShape Model::kv_cache_shape(int32_t num_blocks, int32_t block_size, DType kv_dtype) const {
  KvCacheShape shape = kv_cache_shape(num_blocks, block_size);
  shape.dtype = kv_dtype;
  return shape;
}

size_t Model::kv_bytes_per_token(DType kv_dtype) const { return kv_cache_shape(1).bytes_per_token(kv_dtype); }

size_t Model::weight_bytes_per_token() const {
  const int64_t d = config_.hidden_size;
  size_t bytes = lm_head_->weight_bytes() + d * dtype_size(final_norm_->dtype) + d * dtype_size(embed_tokens_->dtype);
  for (const auto& layer : layers_) {
    for (const LinearWeight* w : {layer.q_proj.get(), layer.k_proj.get(), layer.v_proj.get(), layer.o_proj.get(),
                                  layer.gate_proj.get(), layer.up_proj.get(), layer.down_proj.get()})
      bytes += w->weight_bytes();
    bytes += layer.input_norm->num_bytes + layer.post_attention_norm->num_bytes;
  }
  return bytes;
}

size_t Model::weight_bytes_total() const {
  size_t bytes = weight_bytes_per_token() - config_.hidden_size * dtype_size(embed_tokens_->dtype);
  if (!config_.tie_word_embeddings) bytes += embed_tokens_->num_bytes;
  return bytes;
}

std::string Model::weight_format_name() const { return layers_.empty() ? "none" : layers_[0].q_proj->format_name(); }

namespace {

Status validate_batch(const ForwardBatch& b, const ModelConfig& c, const RankShare& share, const CpuKvCache& cache) {
  const KvCacheShape& s = cache.shape();
  if (s.num_layers != share.num_cache_layers || s.num_kv_heads != share.num_kv_heads || s.head_dim != c.head_dim)
    return invalid_argument("forward: the KV cache shape does not match the model's layers, kv heads or head_dim");
  const int32_t num_seqs = b.num_seqs();
  if (b.positions.size() != b.token_ids.size())
    return invalid_argument("forward: positions and token_ids differ in length");
  if (static_cast<int32_t>(b.seq_token_start.size()) != num_seqs + 1)
    return invalid_argument("forward: seq_token_start must have num_seqs + 1 entries");
  if (b.block_tables.size() < static_cast<size_t>(num_seqs) * b.max_blocks_per_seq)
    return invalid_argument("forward: block_tables is smaller than num_seqs * max_blocks_per_seq");
  for (int32_t s_idx = 0; s_idx < num_seqs; ++s_idx) {
    const int32_t start = b.seq_token_start[s_idx], end = b.seq_token_start[s_idx + 1];
    if (start < 0 || end < start || end > b.num_tokens()) return invalid_argument("forward: bad seq_token_start");
    for (int32_t t = start; t < end; ++t) {
      const int32_t expected = b.seq_context_len[s_idx] - (end - start) + (t - start);
      if (b.positions[t] != expected)
        return invalid_argument("forward: token " + std::to_string(t) + " has position " +
                                std::to_string(b.positions[t]) + " but its sequence's context length implies " +
                                std::to_string(expected));
    }
  }
  for (int32_t idx : b.logits_token_idx)
    if (idx < 0 || idx >= b.num_tokens())
      return invalid_argument("forward: logits_token_idx " + std::to_string(idx) + " is outside the batch");
  return Status::ok();
}

PagedKvLayout make_layout(const ForwardBatch& b, CpuKvCache& cache, int32_t cache_layer,
                          const DecoderLayerWeights& weights) {
  const KvCacheShape& s = cache.shape();
  PagedKvLayout layout;
  layout.key_cache = cache.keys(cache_layer);
  layout.value_cache = cache.values(cache_layer);
  layout.key_cache_fp8 = cache.keys_fp8(cache_layer);
  layout.value_cache_fp8 = cache.values_fp8(cache_layer);
  layout.k_scale = weights.k_scale;
  layout.v_scale = weights.v_scale;
  layout.num_blocks = s.num_blocks;
  layout.block_size = s.block_size;
  layout.num_kv_heads = s.num_kv_heads;
  layout.head_dim = s.head_dim;
  layout.block_tables = b.block_tables.data();
  layout.max_blocks_per_seq = b.max_blocks_per_seq;
  layout.seq_token_start = b.seq_token_start.data();
  layout.seq_context_len = b.seq_context_len.data();
  layout.num_seqs = b.num_seqs();
  return layout;
}

}  // namespace

namespace {

// How the activations of one layer are rounded (ModelLoadOptions::activation_dtype and
// activation_noise_seed); each call is a new place, numbered in call order within the layer.
struct ActivationRounding {
  ActivationDtype dtype = ActivationDtype::kFloat32;
  uint64_t noise_seed = 0;
  int32_t layer = 0;
  int32_t call = 0;
};

// n activations rounded to the type the GPU holds them in (none for kFloat32).
void round_activations(ActivationDtype dtype, float* x, int64_t n) {
  if (dtype == ActivationDtype::kFloat16) round_to_f16(x, x, n);
  if (dtype == ActivationDtype::kBFloat16) round_to_bf16(x, x, n);
}

// Rounds an activation the GPU holds in fp16 or bf16 to that value; with a noise seed, first
// moves each element one f32 ulp up or down (a hash of the seed, the place and the element's index).
void round_like_the_gpu(ActivationRounding& r, std::vector<float>& x, int64_t n) {
  if (r.noise_seed != 0) {
    const uint64_t place = mix64(r.noise_seed ^ mix64((static_cast<uint64_t>(r.layer) << 32) | r.call));
    for (int64_t i = 0; i < n; ++i) {
      const bool up = (mix64(place + static_cast<uint64_t>(i)) & 1) != 0;
      x[i] =
          std::nextafter(x[i], up ? std::numeric_limits<float>::infinity() : -std::numeric_limits<float>::infinity());
    }
  }
  ++r.call;
  round_activations(r.dtype, x.data(), n);
}

}  // namespace

Status Model::run_layer(int32_t layer_idx, const ForwardBatch& batch, CpuKvCache& kv_cache, const RankShare& share,
                        float* hidden) const {
  const ModelConfig& c = config_;
  const DecoderLayerWeights& w = layers_[layer_idx];
  const RankLayerLinears& lin = share.layers[layer_idx];
  const int64_t T = batch.num_tokens(), d = c.hidden_size, D = c.head_dim, inter = share.intermediate;
  const int64_t H = share.num_heads, Hkv = share.num_kv_heads;
  std::vector<float> x(T * d);         // [T, d] normed input
  std::vector<float> q(T * H * D);     // [T, H, D]
  std::vector<float> k(T * Hkv * D);   // [T, Hkv, D]
  std::vector<float> v(T * Hkv * D);   // [T, Hkv, D]
  std::vector<float> attn(T * H * D);  // [T, H, D]
  std::vector<float> gate(T * inter);  // [T, intermediate]
  std::vector<float> up(T * inter);    // [T, intermediate]

  ActivationRounding rounding{activation_dtype_, activation_noise_seed_, layer_idx};
  CROSSPOINT_RETURN_IF_ERROR(
      rms_norm({hidden, w.input_norm->data, w.input_norm->dtype, x.data(), T, d, static_cast<float>(c.rms_norm_eps)}));
  round_like_the_gpu(rounding, x, T * d);
  CROSSPOINT_RETURN_IF_ERROR(lin.q_proj->forward(x.data(), T, 0, q.data()));
  CROSSPOINT_RETURN_IF_ERROR(lin.k_proj->forward(x.data(), T, 0, k.data()));
  CROSSPOINT_RETURN_IF_ERROR(lin.v_proj->forward(x.data(), T, 0, v.data()));
  round_like_the_gpu(rounding, q, T * H * D);
  round_like_the_gpu(rounding, k, T * Hkv * D);
  round_like_the_gpu(rounding, v, T * Hkv * D);
  if (w.q_norm != nullptr) {  // Qwen3: each head's q and k RMS-normalised before RoPE
    const float eps = static_cast<float>(c.rms_norm_eps);
    CROSSPOINT_RETURN_IF_ERROR(rms_norm({q.data(), w.q_norm->data, w.q_norm->dtype, q.data(), T * H, D, eps}));
    CROSSPOINT_RETURN_IF_ERROR(rms_norm({k.data(), w.k_norm->data, w.k_norm->dtype, k.data(), T * Hkv, D, eps}));
    round_like_the_gpu(rounding, q, T * H * D);
    round_like_the_gpu(rounding, k, T * Hkv * D);
  }
  CROSSPOINT_RETURN_IF_ERROR(
      rope({q.data(), 0, T, H, D, batch.positions.data(), rope_inv_freq_.data(), rope_attention_scaling_}));
  CROSSPOINT_RETURN_IF_ERROR(
      rope({k.data(), 0, T, Hkv, D, batch.positions.data(), rope_inv_freq_.data(), rope_attention_scaling_}));
  round_like_the_gpu(rounding, q, T * H * D);
  round_like_the_gpu(rounding, k, T * Hkv * D);

  const PagedKvLayout layout = make_layout(batch, kv_cache, share.first_cache_layer + layer_idx, w);
  CROSSPOINT_RETURN_IF_ERROR(kv_cache_write({k.data(), v.data(), 0, 0, layout}));
  CROSSPOINT_RETURN_IF_ERROR(paged_attention(
      {q.data(), 0, attn.data(), static_cast<int32_t>(H), 1.0f / std::sqrt(static_cast<float>(D)), layout}));
  round_like_the_gpu(rounding, attn, T * H * D);
  CROSSPOINT_RETURN_IF_ERROR(lin.o_proj->forward(attn.data(), T, 0, x.data()));
  if (share.all_reduce) share.all_reduce(x.data(), T * d);
  round_like_the_gpu(rounding, x, T * d);
  CROSSPOINT_RETURN_IF_ERROR(residual_add(hidden, x.data(), T * d));

  CROSSPOINT_RETURN_IF_ERROR(rms_norm({hidden, w.post_attention_norm->data, w.post_attention_norm->dtype, x.data(), T,
                                       d, static_cast<float>(c.rms_norm_eps)}));
  round_like_the_gpu(rounding, x, T * d);
  CROSSPOINT_RETURN_IF_ERROR(lin.gate_proj->forward(x.data(), T, 0, gate.data()));
  CROSSPOINT_RETURN_IF_ERROR(lin.up_proj->forward(x.data(), T, 0, up.data()));
  round_like_the_gpu(rounding, gate, T * inter);
  round_like_the_gpu(rounding, up, T * inter);
  CROSSPOINT_RETURN_IF_ERROR(silu_mul({gate.data(), up.data(), gate.data(), T * inter}));
  round_like_the_gpu(rounding, gate, T * inter);
  CROSSPOINT_RETURN_IF_ERROR(lin.down_proj->forward(gate.data(), T, 0, x.data()));
  if (share.all_reduce) share.all_reduce(x.data(), T * d);
  round_like_the_gpu(rounding, x, T * d);
  return residual_add(hidden, x.data(), T * d);
}

Status Model::forward(const ForwardBatch& batch, CpuKvCache& kv_cache, float* logits) const {
  return forward_share(batch, kv_cache, whole_, logits);
}

Status Model::forward_share(const ForwardBatch& batch, CpuKvCache& kv_cache, const RankShare& share,
                            float* logits) const {
  CROSSPOINT_RETURN_IF_ERROR(validate_batch(batch, config_, share, kv_cache));
  const int64_t T = batch.num_tokens(), d = config_.hidden_size;
  if (T == 0) return Status::ok();
  std::vector<float> hidden(T * d);  // [T, d] f32 residual stream
  CROSSPOINT_RETURN_IF_ERROR(embedding(
      {batch.token_ids.data(), T, embed_tokens_->data, embed_tokens_->dtype, config_.vocab_size, d, hidden.data()}));
  for (int32_t layer = 0; layer < static_cast<int32_t>(layers_.size()); ++layer)
    CROSSPOINT_RETURN_IF_ERROR(run_layer(layer, batch, kv_cache, share, hidden.data()));

  // Only the rows whose logits are wanted go through the final norm and the lm_head.
  const int64_t num_logits = static_cast<int64_t>(batch.logits_token_idx.size());
  if (num_logits == 0) return Status::ok();
  std::vector<float> selected(num_logits * d);  // [num_logits, d]
  for (int64_t i = 0; i < num_logits; ++i)
    std::copy_n(hidden.data() + batch.logits_token_idx[i] * d, d, selected.data() + i * d);
  CROSSPOINT_RETURN_IF_ERROR(rms_norm({selected.data(), final_norm_->data, final_norm_->dtype, selected.data(),
                                       num_logits, d, static_cast<float>(config_.rms_norm_eps)}));
  ActivationRounding final_rounding{activation_dtype_, activation_noise_seed_, static_cast<int32_t>(layers_.size())};
  round_like_the_gpu(final_rounding, selected, num_logits * d);
  const int64_t V = config_.vocab_size, columns = share.vocab.size();
  if (columns == V) {
    CROSSPOINT_RETURN_IF_ERROR(share.lm_head->forward(selected.data(), num_logits, 0, logits));
    round_activations(activation_dtype_, logits, num_logits * V);
    return Status::ok();
  }
  if (columns == 0) return Status::ok();          // more ranks than vocabulary rows
  std::vector<float> part(num_logits * columns);  // this rank's columns, copied into the rows
  CROSSPOINT_RETURN_IF_ERROR(share.lm_head->forward(selected.data(), num_logits, 0, part.data()));
  round_activations(activation_dtype_, part.data(), num_logits * columns);
  for (int64_t i = 0; i < num_logits; ++i)
    std::copy_n(part.data() + i * columns, columns, logits + i * V + share.vocab.begin);
  return Status::ok();
}

}  // namespace crosspoint
