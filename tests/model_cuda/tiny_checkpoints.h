// Tiny random Qwen2-shaped checkpoints for the CUDA model tests, written once per test
// binary into a temp directory: a dense bf16 one (bf16 -> fp16 is exact, so the GPU sees the
// CPU's weights) and its W8A8-FP8, W4A16-RTN and W4A16-GPTQ act-order versions, made by the
// project's own quantiser (crosspoint quantize as a library call), its W8A8-INT8 version (the
// same), a block-wise FP8 one with 128 x 128 blocks (quant_method "fp8", written here as
// transformers' FineGrainedFP8 stores it); and a dense Qwen3 one (per-head q/k norms instead of
// the q/k/v bias).
//   hidden 256, 4 heads of 64, 2 KV heads, intermediate 512, 2 layers, vocab 512, q/k/v bias;
// one more W8A8-FP8 one in SmolLM2-135M's widths (hidden 576, 9 heads / 3 KV heads of 64,
// intermediate 1536), whose K = 576 is not a multiple of 128.
#pragma once

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "common/dtype.h"
#include "formats/safetensors.h"
#include "kernels/fp8.h"
#include "quant/quantize_model.h"

namespace crosspoint::cuda_testing {

inline constexpr int64_t kHeadDim = 64, kLayers = 2, kVocab = 512, kMaxPositions = 512;

struct TinyShape {
  int64_t hidden, heads, kv_heads, inter;
};
inline constexpr TinyShape kTinyShape{256, 4, 2, 512};
inline constexpr TinyShape kSmolLm2Shape{576, 9, 3, 1536};

inline std::string tiny_config_json(const std::string& extra = "", const TinyShape& shape = kTinyShape) {
  return std::string(R"({"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": )") +
         std::to_string(shape.hidden) + R"(, "intermediate_size": )" + std::to_string(shape.inter) +
         R"(, "num_hidden_layers": 2, "num_attention_heads": )" + std::to_string(shape.heads) +
         R"(, "num_key_value_heads": )" + std::to_string(shape.kv_heads) +
         R"(, "vocab_size": 512, "max_position_embeddings": 512, "rms_norm_eps": 1e-06, "rope_theta": 10000.0,
  "tie_word_embeddings": false, "torch_dtype": "bfloat16", "bos_token_id": 1, "eos_token_id": 2)" +
         extra + "}";
}

// A bf16 tensor of normal(mean, stddev) values.
inline TensorToWrite random_bf16(const std::string& name, std::vector<int64_t> shape, std::mt19937& rng, float stddev,
                                 float mean = 0.0f) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::normal_distribution<float> dist(mean, stddev);
  TensorToWrite t{name, DType::kBF16, std::move(shape), std::vector<uint8_t>(static_cast<size_t>(n) * 2)};
  for (int64_t i = 0; i < n; ++i) {
    const uint16_t b = f32_to_bf16(dist(rng));
    t.bytes[i * 2] = static_cast<uint8_t>(b & 0xFF);
    t.bytes[i * 2 + 1] = static_cast<uint8_t>(b >> 8);
  }
  return t;
}

inline std::string tiny_qwen3_config_json() {
  std::string json = tiny_config_json(R"(, "head_dim": 64, "attention_bias": false)");
  const std::string from = R"({"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2")";
  return R"({"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3")" + json.substr(from.size());
}

// Weights scaled so activations keep unit size through the layers (std 1/sqrt(fan_in)).
// qwen3: Qwen3's layout (q/k norms of [head_dim], no q/k/v bias).
inline void write_dense_checkpoint(const std::filesystem::path& dir, uint32_t seed, bool qwen3 = false,
                                   const TinyShape& shape = kTinyShape) {
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "config.json") << (qwen3 ? tiny_qwen3_config_json() : tiny_config_json("", shape));
  const int64_t hidden = shape.hidden, heads = shape.heads, kv_heads = shape.kv_heads, inter = shape.inter;
  std::mt19937 rng(seed);
  const float in_d = 1.0f / std::sqrt(static_cast<float>(hidden)), in_i = 1.0f / std::sqrt(static_cast<float>(inter));
  std::vector<TensorToWrite> t;
  t.push_back(random_bf16("model.embed_tokens.weight", {kVocab, hidden}, rng, 1.0f));
  t.push_back(random_bf16("model.norm.weight", {hidden}, rng, 0.1f, 1.0f));
  t.push_back(random_bf16("lm_head.weight", {kVocab, hidden}, rng, 2.0f * in_d));
  for (int64_t l = 0; l < kLayers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    t.push_back(random_bf16(p + "input_layernorm.weight", {hidden}, rng, 0.1f, 1.0f));
    t.push_back(random_bf16(p + "post_attention_layernorm.weight", {hidden}, rng, 0.1f, 1.0f));
    t.push_back(random_bf16(p + "self_attn.q_proj.weight", {heads * kHeadDim, hidden}, rng, in_d));
    t.push_back(random_bf16(p + "self_attn.k_proj.weight", {kv_heads * kHeadDim, hidden}, rng, in_d));
    t.push_back(random_bf16(p + "self_attn.v_proj.weight", {kv_heads * kHeadDim, hidden}, rng, in_d));
    if (qwen3) {
      t.push_back(random_bf16(p + "self_attn.q_norm.weight", {kHeadDim}, rng, 0.2f, 1.0f));
      t.push_back(random_bf16(p + "self_attn.k_norm.weight", {kHeadDim}, rng, 0.2f, 1.0f));
    } else {
      t.push_back(random_bf16(p + "self_attn.q_proj.bias", {heads * kHeadDim}, rng, 0.2f));
      t.push_back(random_bf16(p + "self_attn.k_proj.bias", {kv_heads * kHeadDim}, rng, 0.2f));
      t.push_back(random_bf16(p + "self_attn.v_proj.bias", {kv_heads * kHeadDim}, rng, 0.2f));
    }
    t.push_back(random_bf16(p + "self_attn.o_proj.weight", {hidden, heads * kHeadDim}, rng, in_d));
    t.push_back(random_bf16(p + "mlp.gate_proj.weight", {inter, hidden}, rng, in_d));
    t.push_back(random_bf16(p + "mlp.up_proj.weight", {inter, hidden}, rng, in_d));
    t.push_back(random_bf16(p + "mlp.down_proj.weight", {hidden, inter}, rng, in_i));
  }
  const Status s = write_safetensors((dir / "model.safetensors").string(), t);
  CROSSPOINT_CHECK(s.is_ok(), "write_dense_checkpoint: writing the safetensors file failed");
}

// The dense checkpoint in dir with every decoder linear block-quantised: weight e4m3 [N, K] and
// weight_scale_inv f32 [N / 128, K / 128] = the block's amax / 448 (every tiny width is a
// multiple of 128), as transformers' FineGrainedFP8 quantiser writes them.
inline void write_fp8_block_checkpoint(const std::filesystem::path& dense, const std::filesystem::path& out) {
  constexpr int64_t kBlock = 128;
  std::filesystem::create_directories(out);
  std::ofstream(out / "config.json") << tiny_config_json(
      R"(, "quantization_config": {"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic", )"
      R"("weight_block_size": [128, 128]})");
  auto model = SafetensorsModel::open_dir(dense.string());
  CROSSPOINT_CHECK(model.is_ok(), "write_fp8_block_checkpoint: cannot open the dense checkpoint");
  std::vector<TensorToWrite> t;
  for (const std::string& name : model.value()->tensor_names()) {
    const TensorInfo& info = *model.value()->find(name);
    const bool linear = name.find(".layers.") != std::string::npos && name.size() > 12 &&
                        name.compare(name.size() - 12, 12, "_proj.weight") == 0;
    if (!linear) {
      const auto* bytes = static_cast<const uint8_t*>(info.data);
      t.push_back({name, info.dtype, info.shape, std::vector<uint8_t>(bytes, bytes + info.num_bytes)});
      continue;
    }
    const int64_t N = info.shape[0], K = info.shape[1];
    std::vector<float> w(static_cast<size_t>(N * K));
    for (int64_t i = 0; i < N * K; ++i) {
      uint16_t b;
      std::memcpy(&b, static_cast<const uint8_t*>(info.data) + i * 2, 2);
      w[i] = bf16_to_f32(b);
    }
    TensorToWrite q{name, DType::kF8E4M3, {N, K}, std::vector<uint8_t>(static_cast<size_t>(N * K))};
    TensorToWrite s{name + "_scale_inv",
                    DType::kF32,
                    {N / kBlock, K / kBlock},
                    std::vector<uint8_t>(static_cast<size_t>(N / kBlock * K / kBlock) * 4)};
    for (int64_t bn = 0; bn < N / kBlock; ++bn) {
      for (int64_t bk = 0; bk < K / kBlock; ++bk) {
        float amax = 0.0f;
        for (int64_t n = bn * kBlock; n < (bn + 1) * kBlock; ++n)
          for (int64_t k = bk * kBlock; k < (bk + 1) * kBlock; ++k) amax = std::max(amax, std::fabs(w[n * K + k]));
        const float scale = std::max(amax, 1e-12f) / kE4M3Max;
        std::memcpy(s.bytes.data() + (bn * (K / kBlock) + bk) * 4, &scale, 4);
        for (int64_t n = bn * kBlock; n < (bn + 1) * kBlock; ++n)
          for (int64_t k = bk * kBlock; k < (bk + 1) * kBlock; ++k)
            q.bytes[n * K + k] = f32_to_e4m3(w[n * K + k] / scale);
      }
    }
    t.push_back(std::move(q));
    t.push_back(std::move(s));
  }
  const Status st = write_safetensors((out / "model.safetensors").string(), t);
  CROSSPOINT_CHECK(st.is_ok(), "write_fp8_block_checkpoint: writing the safetensors file failed");
}

enum class TinyPrecision {
  kFp16,
  kFp8,
  kW4A16Rtn,
  kW4A16GptqActOrder,
  kQwen3Fp16,
  kSmolLm2ShapeFp8,
  kW8A8Int8,
  kFp8Block128
};

inline const char* precision_name(TinyPrecision p) {
  switch (p) {
    case TinyPrecision::kFp16: return "fp16";
    case TinyPrecision::kFp8: return "w8a8_fp8";
    case TinyPrecision::kW4A16Rtn: return "w4a16_rtn";
    case TinyPrecision::kW4A16GptqActOrder: return "w4a16_gptq_act_order";
    case TinyPrecision::kQwen3Fp16: return "qwen3_fp16";
    case TinyPrecision::kSmolLm2ShapeFp8: return "smollm2_shape_w8a8_fp8";
    case TinyPrecision::kW8A8Int8: return "w8a8_int8";
    case TinyPrecision::kFp8Block128: return "w8a8_fp8_block128";
  }
  return "?";
}

// The directories of every precision under one temp root, made on first use and removed by
// remove_all() at the end of the test binary.
class TinyCheckpoints {
 public:
  static TinyCheckpoints& get() {
    static TinyCheckpoints instance;
    return instance;
  }
  // The checkpoint directory for `precision`, or an error from the quantiser.
  Result<std::string> dir(TinyPrecision precision) {
    const std::filesystem::path dense = root_ / "fp16";
    if (!std::filesystem::exists(dense / "model.safetensors")) write_dense_checkpoint(dense, 20261130);
    if (precision == TinyPrecision::kFp16) return dense.string();
    if (precision == TinyPrecision::kQwen3Fp16) {
      const std::filesystem::path qwen3 = root_ / precision_name(precision);
      if (!std::filesystem::exists(qwen3 / "model.safetensors")) write_dense_checkpoint(qwen3, 20261201, true);
      return qwen3.string();
    }
    const std::filesystem::path out = root_ / precision_name(precision);
    if (std::filesystem::exists(out / "model.safetensors")) return out.string();
    if (precision == TinyPrecision::kFp8Block128) {
      write_fp8_block_checkpoint(dense, out);
      return out.string();
    }
    const std::filesystem::path smol_dense = root_ / "smollm2_shape_fp16";
    const bool smol = precision == TinyPrecision::kSmolLm2ShapeFp8;
    if (smol && !std::filesystem::exists(smol_dense / "model.safetensors"))
      write_dense_checkpoint(smol_dense, 20261203, false, kSmolLm2Shape);
    QuantizeModelOptions o;
    o.model_dir = (smol ? smol_dense : dense).string();
    o.out_dir = out.string();
    o.overwrite = true;
    o.scheme = precision == TinyPrecision::kFp8 || smol ? QuantizeScheme::kW8A8Fp8
               : precision == TinyPrecision::kW8A8Int8  ? QuantizeScheme::kW8A8Int8
                                                        : QuantizeScheme::kW4A16;
    o.int4.group_size = 128;
    if (precision == TinyPrecision::kW4A16Rtn) o.int4_method = Int4Method::kRtn;
    if (precision == TinyPrecision::kW4A16GptqActOrder) {
      o.int4_method = Int4Method::kGptq;
      o.int4.act_order = true;
      std::mt19937 rng(7);
      std::uniform_int_distribution<int32_t> token(3, static_cast<int32_t>(kVocab) - 1);
      for (int s = 0; s < 8; ++s) {
        std::vector<int32_t> sample(48);
        for (auto& id : sample) id = token(rng);
        o.calibration.push_back(std::move(sample));
      }
    }
    CROSSPOINT_RETURN_IF_ERROR(quantize_model(o));
    return out.string();
  }
  ~TinyCheckpoints() {
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }

 private:
  TinyCheckpoints()
      : root_(std::filesystem::temp_directory_path() /
              ("crosspoint_model_cuda_" + std::to_string(std::random_device{}()))) {}
  std::filesystem::path root_;
};

}  // namespace crosspoint::cuda_testing
