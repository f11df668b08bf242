// The W4A16 layouts hub checkpoints ship besides GPTQ: compressed-tensors' pack-quantized
// (llm-compressor) and AutoAWQ's GEMM layout. The same codes written in all three layouts must
// dequantise to the same weight, and every inconsistency is refused naming the field or tensor.
// Whole checkpoints against transformers: test_hub_checkpoints_vs_transformers.cc.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <random>

#include "common/dtype.h"
#include "quant/awq_format.h"
#include "quant/gptq_linear_weight.h"
#include "quant/packed_int4_format.h"
#include "quant/quant_config.h"

namespace crosspoint {
namespace {

std::string packed_config(const std::string& weights, const std::string& extra = "") {
  return R"({"quant_method": "compressed-tensors", "format": "pack-quantized", "quantization_status": "compressed",
    "config_groups": {"group_0": {"targets": ["Linear"], "weights": )" +
         weights + R"(, "input_activations": null, "output_activations": null}}, "ignore": ["lm_head"])" + extra + "}";
}

const char* kSymGroup32 =
    R"({"num_bits": 4, "type": "int", "symmetric": true, "strategy": "group", "group_size": 32, "dynamic": false})";
const char* kAwq = R"({"quant_method": "awq", "bits": 4, "group_size": 32, "zero_point": true, "version": "GEMM",
    "modules_to_not_convert": ["visual"]})";

TEST(Int4CheckpointConfigTest, ParsesPackQuantizedAndAwq) {
  auto sym = parse_quant_config(packed_config(kSymGroup32));
  ASSERT_TRUE(sym.is_ok()) << sym.status().to_string();
  EXPECT_EQ(sym->scheme, QuantScheme::kPackedInt4);
  EXPECT_EQ(sym->gptq.group_size, 32);
  EXPECT_TRUE(sym->gptq.sym);
  EXPECT_FALSE(sym->gptq.desc_act);
  EXPECT_TRUE(sym->is_ignored("lm_head"));
  EXPECT_FALSE(sym->is_ignored("model.layers.0.mlp.up_proj"));

  auto channel = parse_quant_config(packed_config(
      R"({"num_bits": 4, "type": "int", "symmetric": false, "strategy": "channel", "actorder": "group"})"));
  ASSERT_TRUE(channel.is_ok()) << channel.status().to_string();
  EXPECT_EQ(channel->gptq.group_size, -1);
  EXPECT_FALSE(channel->gptq.sym);
  EXPECT_TRUE(channel->gptq.desc_act);

  auto awq = parse_quant_config(kAwq);
  ASSERT_TRUE(awq.is_ok()) << awq.status().to_string();
  EXPECT_EQ(awq->scheme, QuantScheme::kAwqInt4);
  EXPECT_EQ(awq->gptq.group_size, 32);
  EXPECT_FALSE(awq->gptq.sym);
  EXPECT_TRUE(awq->is_ignored("model.visual.blocks.0.proj"));
  EXPECT_FALSE(awq->is_ignored("model.layers.0.mlp.up_proj"));
}

TEST(Int4CheckpointConfigTest, TargetsLimitWhichLinearsAreQuantised) {
  auto q = parse_quant_config(
      R"({"quant_method": "compressed-tensors", "format": "pack-quantized", "config_groups": {"group_0": {
        "targets": ["re:.*mlp.*"], "weights": )" +
      std::string(kSymGroup32) + "}}}");
  ASSERT_TRUE(q.is_ok()) << q.status().to_string();
  EXPECT_FALSE(q->is_ignored("model.layers.1.mlp.down_proj"));
  EXPECT_TRUE(q->is_ignored("model.layers.1.self_attn.q_proj"));
}

void expect_refused(const std::string& json, const std::string& needle) {
  auto r = parse_quant_config(json);
  ASSERT_FALSE(r.is_ok()) << json;
  EXPECT_EQ(r.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(r.status().message().find(needle), std::string::npos) << r.status().message();
}

TEST(Int4CheckpointConfigTest, RefusesWhatCannotBeServedNamingTheField) {
  expect_refused(packed_config(R"({"num_bits": 8, "type": "int", "strategy": "channel"})"), "weights is 8-bit int");
  expect_refused(packed_config(R"({"num_bits": 4, "type": "int", "strategy": "tensor"})"), "weights.strategy");
  expect_refused(packed_config(R"({"num_bits": 4, "type": "int", "strategy": "group", "group_size": -1})"),
                 "weights.group_size");
  expect_refused(packed_config(R"({"num_bits": 4, "type": "int", "strategy": "group"})"), "weights.group_size");
  expect_refused(packed_config(R"({"num_bits": 4, "type": "int", "strategy": "channel", "dynamic": true})"),
                 "weights.dynamic");
  expect_refused(packed_config(R"({"num_bits": 4, "type": "int", "strategy": "channel", "actorder": "random"})"),
                 "weights.actorder");
  expect_refused(R"({"quant_method": "compressed-tensors", "format": "pack-quantized", "config_groups": {"g": {
      "weights": {"num_bits": 4, "type": "int", "strategy": "channel"},
      "input_activations": {"num_bits": 8, "type": "int", "strategy": "token", "dynamic": true}}}})",
                 "input_activations");
  expect_refused(R"({"quant_method": "compressed-tensors", "format": "pack-quantized", "config_groups": {
      "a": {"weights": {"num_bits": 4, "type": "int", "strategy": "channel"}},
      "b": {"weights": {"num_bits": 4, "type": "int", "strategy": "group", "group_size": 64}}}})",
                 "config_groups.b.weights differs");
  expect_refused(
      R"({"quant_method": "compressed-tensors", "format": "pack-quantized", "quantization_status": "frozen",
      "config_groups": {"a": {"weights": {"num_bits": 4, "type": "int", "strategy": "channel"}}}})",
      "quantization_status");
  expect_refused(R"({"quant_method": "compressed-tensors", "format": "nvfp4-pack-quantized", "config_groups": {}})",
                 ".format is 'nvfp4-pack-quantized'");
  expect_refused(R"({"quant_method": "awq", "bits": 4, "group_size": 128, "version": "gemv"})", "version");
  expect_refused(R"({"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": false})", "zero_point");
  expect_refused(R"({"quant_method": "awq", "bits": 8, "group_size": 128})", "bits");
  expect_refused(R"({"quant_method": "awq", "bits": 4})", "group_size");
}

// ---- one layer, the same codes in three layouts ----

constexpr int64_t kK = 64, kN = 16, kG = 16, kGroups = kK / kG;

struct Codes {
  std::vector<uint8_t> q;       // [K, N] 0..15
  std::vector<uint8_t> zero;    // [groups, N] 0..15
  std::vector<uint16_t> scale;  // [groups, N] fp16
  std::vector<int32_t> g_idx;   // [K]
};

Codes random_codes(bool act_order) {
  std::mt19937 rng(7);
  Codes c;
  for (int64_t i = 0; i < kK * kN; ++i) c.q.push_back(static_cast<uint8_t>(rng() % 16));
  for (int64_t i = 0; i < kGroups * kN; ++i) {
    c.zero.push_back(static_cast<uint8_t>(rng() % 16));
    c.scale.push_back(f32_to_f16(0.001f + 0.001f * static_cast<float>(rng() % 20)));
  }
  std::vector<int32_t> rows(kK);
  for (int64_t k = 0; k < kK; ++k) rows[k] = static_cast<int32_t>(k);
  if (act_order) std::shuffle(rows.begin(), rows.end(), rng);
  c.g_idx.resize(kK);
  for (int64_t i = 0; i < kK; ++i) c.g_idx[rows[i]] = static_cast<int32_t>(i / kG);
  return c;
}

template <typename T>
std::vector<uint8_t> bytes_of(const std::vector<T>& v) {
  std::vector<uint8_t> b(v.size() * sizeof(T));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// w[k, n] = scale[g_idx[k], n] * (q[k, n] - zero[g_idx[k], n]), [K, N].
std::vector<float> dequantized(const Codes& c) {
  std::vector<float> w(kK * kN);
  for (int64_t k = 0; k < kK; ++k)
    for (int64_t n = 0; n < kN; ++n) {
      const int64_t g = c.g_idx[k];
      w[k * kN + n] = f16_to_f32(c.scale[g * kN + n]) * (static_cast<float>(c.q[k * kN + n]) - c.zero[g * kN + n]);
    }
  return w;
}

std::vector<TensorToWrite> packed_tensors(const Codes& c, bool with_g_idx) {
  std::vector<int32_t> packed(kN * kK / 8, 0), zeros(kN / 8 * kGroups, 0);
  for (int64_t n = 0; n < kN; ++n)
    for (int64_t k = 0; k < kK; ++k)
      packed[n * (kK / 8) + k / 8] |= static_cast<int32_t>(static_cast<uint32_t>(c.q[k * kN + n]) << (4 * (k % 8)));
  for (int64_t n = 0; n < kN; ++n)
    for (int64_t g = 0; g < kGroups; ++g)
      zeros[(n / 8) * kGroups + g] |= static_cast<int32_t>(static_cast<uint32_t>(c.zero[g * kN + n]) << (4 * (n % 8)));
  std::vector<uint16_t> scale_t(kN * kGroups);  // [N, groups]
  for (int64_t n = 0; n < kN; ++n)
    for (int64_t g = 0; g < kGroups; ++g) scale_t[n * kGroups + g] = c.scale[g * kN + n];
  std::vector<TensorToWrite> t = {{"layer.weight_packed", DType::kI32, {kN, kK / 8}, bytes_of(packed)},
                                  {"layer.weight_scale", DType::kF16, {kN, kGroups}, bytes_of(scale_t)},
                                  {"layer.weight_zero_point", DType::kI32, {kN / 8, kGroups}, bytes_of(zeros)},
                                  {"layer.weight_shape", DType::kI64, {2}, bytes_of(std::vector<int64_t>{kN, kK})}};
  if (with_g_idx) t.push_back({"layer.weight_g_idx", DType::kI32, {kK}, bytes_of(c.g_idx)});
  return t;
}

std::vector<TensorToWrite> awq_tensors(const Codes& c) {
  const int order[8] = {0, 2, 4, 6, 1, 3, 5, 7};  // AutoAWQ's WQLinear_GEMM packing order
  std::vector<int32_t> qweight(kK * kN / 8, 0), qzeros(kGroups * kN / 8, 0);
  for (int64_t col = 0; col < kN / 8; ++col)
    for (int i = 0; i < 8; ++i) {
      const int64_t n = col * 8 + order[i];
      for (int64_t k = 0; k < kK; ++k)
        qweight[k * (kN / 8) + col] |= static_cast<int32_t>(static_cast<uint32_t>(c.q[k * kN + n]) << (4 * i));
      for (int64_t g = 0; g < kGroups; ++g)
        qzeros[g * (kN / 8) + col] |= static_cast<int32_t>(static_cast<uint32_t>(c.zero[g * kN + n]) << (4 * i));
    }
  return {{"layer.qweight", DType::kI32, {kK, kN / 8}, bytes_of(qweight)},
          {"layer.qzeros", DType::kI32, {kGroups, kN / 8}, bytes_of(qzeros)},
          {"layer.scales", DType::kF16, {kGroups, kN}, bytes_of(c.scale)}};
}

class LayerCheckpoint {
 public:
  explicit LayerCheckpoint(const std::vector<TensorToWrite>& tensors) {
    dir_ = std::filesystem::temp_directory_path() /
           ("crosspoint_int4_layouts_" + std::to_string(::getpid()) + "_" + std::to_string(counter_++));
    std::filesystem::create_directories(dir_);
    EXPECT_TRUE(write_safetensors((dir_ / "model.safetensors").string(), tensors).is_ok());
    auto model = SafetensorsModel::open_dir(dir_.string());
    EXPECT_TRUE(model.is_ok()) << model.status().to_string();
    if (model.is_ok()) model_ = std::move(model).value();
  }
  ~LayerCheckpoint() { std::filesystem::remove_all(dir_); }

  Result<std::unique_ptr<LinearWeight>> load(const LinearWeightFormat& format, const std::string& quant_json) {
    config_.quantization_config_json = quant_json;
    LinearWeightRequest r;
    r.tensors = model_.get();
    r.config = &config_;
    r.prefix = "layer";
    r.in_features = kK;
    r.out_features = kN;
    return format.load(r);
  }

 private:
  static inline int counter_ = 0;
  std::filesystem::path dir_;
  std::unique_ptr<SafetensorsModel> model_;
  ModelConfig config_;
};

std::vector<float> dequantize(const LinearWeight& layer) {
  const auto* gptq = dynamic_cast<const GptqLinearWeight*>(&layer);
  EXPECT_NE(gptq, nullptr);
  return gptq != nullptr ? gptq->dequantize() : std::vector<float>();
}

TEST(Int4CheckpointLayoutTest, PackQuantizedAsymmetricActOrderDequantisesToTheCodes) {
  const Codes c = random_codes(/*act_order=*/true);
  LayerCheckpoint ckpt(packed_tensors(c, /*with_g_idx=*/true));
  auto layer = ckpt.load(*packed_int4_linear_weight_format(),
                         packed_config(R"({"num_bits": 4, "type": "int", "symmetric": false, "strategy": "group",
                                           "group_size": 16, "actorder": "group"})"));
  ASSERT_TRUE(layer.is_ok()) << layer.status().to_string();
  EXPECT_EQ((*layer)->format_name(), "w4a16-g16-act");
  EXPECT_EQ(dequantize(**layer), dequantized(c));
}

TEST(Int4CheckpointLayoutTest, PackQuantizedSymmetricIgnoresStoredZeroPoints) {
  Codes c = random_codes(/*act_order=*/false);
  LayerCheckpoint ckpt(packed_tensors(c, /*with_g_idx=*/false));
  auto layer = ckpt.load(*packed_int4_linear_weight_format(),
                         packed_config(R"({"num_bits": 4, "type": "int", "symmetric": true, "strategy": "group",
                                           "group_size": 16})"));
  ASSERT_TRUE(layer.is_ok()) << layer.status().to_string();
  std::fill(c.zero.begin(), c.zero.end(), 8);  // symmetric: value + 8 around 8
  EXPECT_EQ(dequantize(**layer), dequantized(c));
}

TEST(Int4CheckpointLayoutTest, AwqDequantisesToTheCodes) {
  const Codes c = random_codes(/*act_order=*/false);
  LayerCheckpoint ckpt(awq_tensors(c));
  auto layer = ckpt.load(*awq_linear_weight_format(),
                         R"({"quant_method": "awq", "bits": 4, "group_size": 16, "version": "gemm"})");
  ASSERT_TRUE(layer.is_ok()) << layer.status().to_string();
  EXPECT_EQ((*layer)->format_name(), "w4a16-g16");
  EXPECT_EQ(dequantize(**layer), dequantized(c));
}

TEST(Int4CheckpointLayoutTest, RefusesInconsistentTensorsNamingThem) {
  const Codes c = random_codes(false);
  const std::string asym =
      packed_config(R"({"num_bits": 4, "type": "int", "symmetric": false, "strategy": "group", "group_size": 16})");
  auto refused = [&](std::vector<TensorToWrite> tensors, const std::string& needle) {
    LayerCheckpoint ckpt(tensors);
    auto r = ckpt.load(*packed_int4_linear_weight_format(), asym);
    ASSERT_FALSE(r.is_ok()) << needle;
    EXPECT_NE(r.status().message().find(needle), std::string::npos) << r.status().message();
  };
  auto tensors = packed_tensors(c, false);
  tensors[3].bytes = bytes_of(std::vector<int64_t>{kN, kK + 8});
  refused(tensors, "layer.weight_shape says [16, 72]");
  tensors = packed_tensors(c, false);
  tensors.erase(tensors.begin() + 2);
  refused(tensors, "layer.weight_zero_point");
  tensors = packed_tensors(c, false);
  tensors[1].shape = {kN / 2, kGroups * 2};
  refused(tensors, "layer.weight_scale has shape [8, 8]");
  tensors = packed_tensors(c, false);
  tensors.push_back({"layer.weight_g_idx", DType::kI32, {kK}, bytes_of(std::vector<int32_t>(kK, kGroups))});
  refused(tensors, "layer.weight_g_idx holds group 4");

  LayerCheckpoint awq(awq_tensors(c));
  auto r = awq.load(*awq_linear_weight_format(), R"({"quant_method": "awq", "bits": 4, "group_size": 32})");
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("layer.qzeros has shape [4, 2], expected [2, 2]"), std::string::npos)
      << r.status().message();
}

}  // namespace
}  // namespace crosspoint
