// quantization_config parsing and the two quantised weight formats loading checkpoints
// written through pack_gptq_tensors / the FP8 quantiser, including the refusals.
#include <filesystem>

#include "common/dtype.h"
#include "formats/model_config.h"
#include "kernels/fp8.h"
#include "kernels/w4a16_linear.h"
#include "quant/fp8_linear_weight.h"
#include "quant/fp8_quantizer.h"
#include "quant/gptq_linear_weight.h"
#include "quant/int4_quantizer.h"
#include "quant/quant_config.h"
#include "quant/quant_test_util.h"

namespace crosspoint {
namespace {

using quant_testing::max_abs;
using quant_testing::max_abs_diff;
using quant_testing::random_normal;

const char* kGptq = R"({"quant_method": "gptq", "bits": 4, "group_size": 32, "desc_act": false, "sym": true})";

std::string fp8_config(const std::string& weight_extra = "", const std::string& act_extra = "") {
  return R"({"quant_method": "compressed-tensors", "format": "float-quantized", "quantization_status": "compressed",
    "config_groups": {"group_0": {"targets": ["Linear"],
      "weights": {"num_bits": 8, "type": "float", "strategy": "channel", "dynamic": false)" +
         weight_extra + R"(},
      "input_activations": {"num_bits": 8, "type": "float", "strategy": "token", "dynamic": true)" +
         act_extra +
         R"(}}},
    "ignore": ["lm_head"]})";
}

TEST(QuantConfigTest, ParsesBothSchemes) {
  auto g = parse_quant_config(kGptq);
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  EXPECT_EQ(g->scheme, QuantScheme::kGptqInt4);
  EXPECT_EQ(g->gptq.group_size, 32);
  EXPECT_TRUE(g->gptq.zero_point_minus_one);
  auto f = parse_quant_config(fp8_config());
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  EXPECT_EQ(f->scheme, QuantScheme::kFp8Dynamic);
  EXPECT_TRUE(f->is_ignored("lm_head"));
  EXPECT_FALSE(f->is_ignored("model.layers.0.mlp.up_proj"));
  EXPECT_EQ(parse_quant_config("")->scheme, QuantScheme::kNone);
}

TEST(QuantConfigTest, OwnWritersRoundTrip) {
  GptqConfig g;
  g.group_size = 64;
  g.desc_act = true;
  auto parsed = parse_quant_config(gptq_quantization_config_json(g, 0.01, true));
  ASSERT_TRUE(parsed.is_ok()) << parsed.status().to_string();
  EXPECT_EQ(parsed->gptq.group_size, 64);
  EXPECT_TRUE(parsed->gptq.desc_act);
  auto parsed_fp8 = parse_quant_config(fp8_dynamic_quantization_config_json(Fp8Config{}, {"lm_head"}));
  ASSERT_TRUE(parsed_fp8.is_ok()) << parsed_fp8.status().to_string();
  EXPECT_TRUE(parsed_fp8->is_ignored("lm_head"));
}

void expect_refused(const std::string& json, const std::string& needle) {
  auto r = parse_quant_config(json);
  ASSERT_FALSE(r.is_ok()) << json;
  EXPECT_EQ(r.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(r.status().message().find(needle), std::string::npos) << r.status().message();
}

TEST(QuantConfigTest, RefusesUnsupportedConfigsNamingTheField) {
  expect_refused(R"({"quant_method": "gptq", "bits": 8, "group_size": 128})", "bits");
  expect_refused(R"({"quant_method": "gptq", "bits": 3, "group_size": 128})", "bits");
  expect_refused(R"({"quant_method": "gptq", "bits": 4, "group_size": 0})", "group_size");
  expect_refused(R"({"quant_method": "gptq", "bits": 4, "group_size": 128, "checkpoint_format": "marlin"})",
                 "checkpoint_format");
  expect_refused(R"({"quant_method": "bitsandbytes", "bits": 4})", "quant_method");
  expect_refused(fp8_config(", \"symmetric\": false"), "symmetric");
  expect_refused(fp8_config("", ", \"symmetric\": false"), "asymmetric");
  expect_refused(fp8_config(", \"num_bits\": 4"), "weights");
  expect_refused(R"({"quant_method": "compressed-tensors", "format": "nvfp4-pack-quantized", "config_groups": {}})",
                 "format");
  // Non-integral or out-of-range numbers are refused, not cast (a cast of 6.7e69 to int64 is undefined).
  expect_refused(R"({"quant_method": "gptq", "bits": 6.66667e69, "group_size": 128})", "bits");
  expect_refused(R"({"quant_method": "gptq", "bits": 4.0, "group_size": 128})", "bits");
  expect_refused(R"({"quant_method": "gptq", "bits": 4, "group_size": 18446744073709551615})", "group_size");
}

// A directory holding one safetensors file with `tensors`, removed at the end.
class TempCheckpoint {
 public:
  explicit TempCheckpoint(const std::vector<TensorToWrite>& tensors) {
    std::string test_name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    for (char& c : test_name)
      if (c == '/') c = '_';  // parameterised tests are named "Name/0"
    dir_ = std::filesystem::temp_directory_path() /
           ("crosspoint_quant_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "_" + test_name);
    std::filesystem::create_directories(dir_);
    EXPECT_TRUE(write_safetensors((dir_ / "model.safetensors").string(), tensors).is_ok());
    auto model = SafetensorsModel::open_dir(dir_.string());
    EXPECT_TRUE(model.is_ok()) << model.status().to_string();
    if (model.is_ok()) model_ = std::move(model).value();
  }
  ~TempCheckpoint() { std::filesystem::remove_all(dir_); }
  const SafetensorsModel& tensors() const { return *model_; }

 private:
  std::filesystem::path dir_;
  std::unique_ptr<SafetensorsModel> model_;
};

template <typename T>
std::vector<uint8_t> bytes_of(const std::vector<T>& v) {
  std::vector<uint8_t> b(v.size() * sizeof(T));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

LinearWeightRequest request_for(const TempCheckpoint& ckpt, const ModelConfig& config, int64_t K, int64_t N) {
  LinearWeightRequest r;
  r.tensors = &ckpt.tensors();
  r.config = &config;
  r.prefix = "layer";
  r.in_features = K;
  r.out_features = N;
  return r;
}

TEST(Fp8FormatTest, LoadsAndRunsLikeTheReference) {
  const int64_t K = 48, N = 24, rows = 3;
  const auto w = random_normal(N * K, 1, 0.2f);
  const Fp8Quantized q = quantize_fp8_per_channel(w.data(), N, K);
  std::vector<uint16_t> scale_bf16(N);
  std::vector<float> scale_rounded(N);
  for (int64_t n = 0; n < N; ++n) {
    scale_bf16[n] = f32_to_bf16(q.scale[n]);  // the on-disk scale is often bf16
    scale_rounded[n] = bf16_to_f32(scale_bf16[n]);
  }
  TempCheckpoint ckpt({{"layer.weight", DType::kF8E4M3, {N, K}, q.weight},
                       {"layer.weight_scale", DType::kBF16, {N, 1}, bytes_of(scale_bf16)}});
  ModelConfig config;
  config.quantization_config_json = fp8_config();
  auto layer = fp8_linear_weight_format()->load(request_for(ckpt, config, K, N));
  ASSERT_TRUE(layer.is_ok()) << layer.status().to_string();
  EXPECT_EQ(layer.value()->format_name(), "w8a8-fp8");
  const auto x = random_normal(rows * K, 2);
  std::vector<float> y(rows * N), y_ref(rows * N);
  ASSERT_TRUE(layer.value()->forward(x.data(), rows, 0, y.data()).is_ok());
  ASSERT_TRUE(
      fp8_linear_ref({x.data(), 0, q.weight.data(), scale_rounded.data(), nullptr, y_ref.data(), rows, K, N}).is_ok());
  EXPECT_LE(max_abs_diff(y, y_ref), 1e-4f * (1.0f + max_abs(y_ref)));
}

std::string fp8_static_config() {
  return R"({"quant_method": "compressed-tensors", "format": "float-quantized", "quantization_status": "compressed",
    "config_groups": {"group_0": {"targets": ["Linear"],
      "weights": {"num_bits": 8, "type": "float", "strategy": "tensor", "dynamic": false},
      "input_activations": {"num_bits": 8, "type": "float", "strategy": "tensor", "dynamic": false}}},
    "ignore": ["lm_head"]})";
}

TEST(Fp8FormatTest, StaticInputScalesAreReadAndFusedLayersShareTheLargest) {
  auto parsed = parse_quant_config(fp8_static_config());
  ASSERT_TRUE(parsed.is_ok()) << parsed.status().to_string();
  EXPECT_TRUE(parsed->fp8.static_input_scale);
  EXPECT_FALSE(parsed->fp8.per_channel_weight_scale);
  const int64_t K = 16, N = 8;
  std::vector<uint8_t> w(N * K, 0x38);
  auto one = [](float v) { return bytes_of(std::vector<float>{v}); };
  std::vector<TensorToWrite> tensors;
  const float input_scales[] = {0.25f, 0.5f, 0.125f};  // q, k, v: the GPU runs them as one linear
  const char* names[] = {"q_proj", "k_proj", "v_proj"};
  for (int i = 0; i < 3; ++i) {
    const std::string p = std::string("model.layers.0.self_attn.") + names[i];
    tensors.push_back({p + ".weight", DType::kF8E4M3, {N, K}, w});
    tensors.push_back({p + ".weight_scale", DType::kF32, {1}, one(0.01f)});
    tensors.push_back({p + ".input_scale", DType::kF32, {1}, one(input_scales[i])});
  }
  tensors.push_back({"model.layers.0.self_attn.o_proj.weight", DType::kF8E4M3, {N, K}, w});
  tensors.push_back({"model.layers.0.self_attn.o_proj.weight_scale", DType::kF32, {1}, one(0.01f)});
  tensors.push_back({"model.layers.0.self_attn.o_proj.input_scale",
                     DType::kBF16,
                     {},
                     bytes_of(std::vector<uint16_t>{f32_to_bf16(0.75f)})});
  TempCheckpoint ckpt(tensors);
  ModelConfig config;
  config.quantization_config_json = fp8_static_config();
  for (const char* name : {"q_proj", "k_proj", "v_proj", "o_proj"}) {
    LinearWeightRequest r = request_for(ckpt, config, K, N);
    r.prefix = std::string("model.layers.0.self_attn.") + name;
    auto layer = fp8_linear_weight_format()->load(r);
    ASSERT_TRUE(layer.is_ok()) << layer.status().to_string();
    EXPECT_EQ((*layer)->format_name(), "w8a8-fp8-static");
    const auto storage = std::get<Fp8WeightStorage>((*layer)->view().storage);
    EXPECT_EQ(storage.input_scale, std::string(name) == "o_proj" ? 0.75f : 0.5f) << name;
  }
}

TEST(Fp8FormatTest, StaticInputScaleMissingOrBadIsRefusedNamingIt) {
  const int64_t K = 16, N = 8;
  std::vector<uint8_t> w(N * K, 0x38);
  ModelConfig config;
  config.quantization_config_json = fp8_static_config();
  for (const auto& [scale, needle] : std::vector<std::pair<std::vector<float>, std::string>>{
           {{}, "layer.input_scale"}, {{0.0f}, "expected a finite positive scale"}, {{1.0f, 2.0f}, "shape [2]"}}) {
    std::vector<TensorToWrite> tensors = {{"layer.weight", DType::kF8E4M3, {N, K}, w},
                                          {"layer.weight_scale", DType::kF32, {1}, bytes_of(std::vector<float>{1.0f})}};
    if (!scale.empty())
      tensors.push_back({"layer.input_scale", DType::kF32, {static_cast<int64_t>(scale.size())}, bytes_of(scale)});
    TempCheckpoint ckpt(tensors);
    auto r = fp8_linear_weight_format()->load(request_for(ckpt, config, K, N));
    ASSERT_FALSE(r.is_ok()) << needle;
    EXPECT_NE(r.status().message().find(needle), std::string::npos) << r.status().message();
  }
  // Static activations must be per tensor.
  std::string token_static = fp8_static_config();
  token_static.replace(token_static.rfind("\"tensor\""), 8, "\"token\"");
  auto parsed = parse_quant_config(token_static);
  ASSERT_FALSE(parsed.is_ok());
  EXPECT_NE(parsed.status().message().find("input_activations.strategy is 'token'"), std::string::npos)
      << parsed.status().message();
}

TEST(Fp8FormatTest, RefusesMissingScaleWrongDtypeAndShape) {
  const int64_t K = 16, N = 8;
  std::vector<uint8_t> w(N * K, 0x38);
  std::vector<float> scale(N, 0.5f);
  ModelConfig config;
  config.quantization_config_json = fp8_config();
  {
    TempCheckpoint ckpt({{"layer.weight", DType::kF8E4M3, {N, K}, w}});
    auto r = fp8_linear_weight_format()->load(request_for(ckpt, config, K, N));
    ASSERT_FALSE(r.is_ok());
    EXPECT_NE(r.status().message().find("layer.weight_scale"), std::string::npos) << r.status().message();
  }
  {
    TempCheckpoint ckpt({{"layer.weight", DType::kF8E4M3, {N, K}, w},
                         {"layer.weight_scale", DType::kF32, {N - 1, 1}, bytes_of(std::vector<float>(N - 1, 1.0f))}});
    auto r = fp8_linear_weight_format()->load(request_for(ckpt, config, K, N));
    ASSERT_FALSE(r.is_ok());
    EXPECT_NE(r.status().message().find("layer.weight_scale"), std::string::npos) << r.status().message();
  }
  {
    TempCheckpoint ckpt(
        {{"layer.weight", DType::kU8, {N, K}, w}, {"layer.weight_scale", DType::kF32, {N, 1}, bytes_of(scale)}});
    auto r = fp8_linear_weight_format()->load(request_for(ckpt, config, K, N));
    ASSERT_FALSE(r.is_ok());
    EXPECT_NE(r.status().message().find("layer.weight"), std::string::npos) << r.status().message();
  }
  {
    TempCheckpoint ckpt({{"layer.weight", DType::kF8E4M3, {N, K + 8}, std::vector<uint8_t>(N * (K + 8))},
                         {"layer.weight_scale", DType::kF32, {N, 1}, bytes_of(scale)}});
    auto r = fp8_linear_weight_format()->load(request_for(ckpt, config, K, N));
    ASSERT_FALSE(r.is_ok());
    EXPECT_NE(r.status().message().find("shape"), std::string::npos) << r.status().message();
  }
}

Int4Quantized quantized_layer(int64_t K, int64_t N, int64_t G, bool act_order) {
  const auto w = random_normal(K * N, 3, 0.1f);  // [K, N]
  Int4QuantOptions options;
  options.group_size = G;
  options.act_order = act_order;
  if (!act_order) return rtn_quantize_int4(w.data(), K, N, options).value();
  // act-order through GPTQ with a Hessian whose diagonal is not monotone
  std::vector<double> h(K * K, 0.0);
  for (int64_t k = 0; k < K; ++k) h[k * K + k] = 1.0 + (k * 7919 % K);
  auto factor = gptq_factor_hessian(h, K, options);
  return gptq_quantize_int4(w.data(), K, N, factor.value(), options).value();
}

class GptqFormatTest : public ::testing::TestWithParam<bool> {};

TEST_P(GptqFormatTest, LoadsWhatThePackerWroteAndRunsLikeTheReference) {
  const bool act_order = GetParam();
  const int64_t K = 96, N = 40, G = 32, rows = 5;
  const Int4Quantized q = quantized_layer(K, N, G, act_order);
  TempCheckpoint ckpt(pack_gptq_tensors(q, "layer"));
  ModelConfig config;
  config.quantization_config_json = kGptq;
  auto loaded = gptq_linear_weight_format()->load(request_for(ckpt, config, K, N));
  ASSERT_TRUE(loaded.is_ok()) << loaded.status().to_string();
  const auto* layer = dynamic_cast<const GptqLinearWeight*>(loaded.value().get());
  ASSERT_NE(layer, nullptr);
  EXPECT_EQ(layer->format_name(), act_order ? "w4a16-g32-act" : "w4a16-g32");
  EXPECT_EQ(layer->dequantize(), q.dequantize());  // bit-exact: same codes, scales, zeros

  const auto x = random_normal(rows * K, 4);
  std::vector<float> y(rows * N), y_ref(rows * N);
  ASSERT_TRUE(layer->forward(x.data(), rows, 0, y.data()).is_ok());
  // The reference on the raw checkpoint tensors (real zero point = stored + 1).
  const TensorInfo* qweight = ckpt.tensors().find("layer.qweight");
  const TensorInfo* g_idx = ckpt.tensors().find("layer.g_idx");
  W4A16LinearArgs ref;
  ref.x = x.data();
  ref.qweight = reinterpret_cast<const int32_t*>(qweight->data);
  ref.scales = q.scales.data();
  ref.zeros = q.zeros.data();
  ref.g_idx = reinterpret_cast<const int32_t*>(g_idx->data);
  ref.y = y_ref.data();
  ref.num_rows = rows;
  ref.in_features = K;
  ref.out_features = N;
  ref.group_size = G;
  ASSERT_TRUE(w4a16_linear_ref(ref).is_ok());
  EXPECT_LE(max_abs_diff(y, y_ref), 1e-5f * (1.0f + max_abs(y_ref)));
}

INSTANTIATE_TEST_SUITE_P(ActOrder, GptqFormatTest, ::testing::Bool());

TEST(GptqFormatTest, RefusesBadGroupMissingZerosAndMismatchedShapes) {
  const int64_t K = 96, N = 40;
  const Int4Quantized q = quantized_layer(K, N, 32, false);
  auto tensors = pack_gptq_tensors(q, "layer");
  ModelConfig config;
  config.quantization_config_json =
      R"({"quant_method": "gptq", "bits": 4, "group_size": 64})";  // 64 does not divide 96
  {
    TempCheckpoint ckpt(tensors);
    auto r = gptq_linear_weight_format()->load(request_for(ckpt, config, K, N));
    ASSERT_FALSE(r.is_ok());
    EXPECT_NE(r.status().message().find("layer.qweight"), std::string::npos) << r.status().message();
    EXPECT_NE(r.status().message().find("does not divide"), std::string::npos) << r.status().message();
  }
  config.quantization_config_json = kGptq;
  {
    std::vector<TensorToWrite> no_zeros;
    for (const auto& t : tensors)
      if (t.name != "layer.qzeros") no_zeros.push_back(t);
    TempCheckpoint ckpt(no_zeros);
    auto r = gptq_linear_weight_format()->load(request_for(ckpt, config, K, N));
    ASSERT_FALSE(r.is_ok());
    EXPECT_NE(r.status().message().find("layer.qzeros"), std::string::npos) << r.status().message();
  }
  {
    TempCheckpoint ckpt(tensors);
    auto r = gptq_linear_weight_format()->load(request_for(ckpt, config, K, N + 8));  // config says N + 8
    ASSERT_FALSE(r.is_ok());
    EXPECT_NE(r.status().message().find("layer.qweight"), std::string::npos) << r.status().message();
  }
}

}  // namespace
}  // namespace crosspoint
