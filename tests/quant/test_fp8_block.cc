// Block-wise FP8: the threaded kernel against the reference on partial blocks, the per-group
// activation scales, and the configs and tensors of both checkpoint forms, refusals included.
// Whole checkpoints against transformers: test_hub_checkpoints_vs_transformers.cc.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "common/dtype.h"
#include "formats/safetensors.h"
#include "kernels/fp8.h"
#include "kernels/fp8_block.h"
#include "quant/fp8_block_linear_weight.h"
#include "quant/quant_config.h"
#include "quant/quant_test_util.h"

namespace crosspoint {
namespace {

using quant_testing::max_abs;
using quant_testing::max_abs_diff;
using quant_testing::random_normal;

TEST(Fp8BlockKernelTest, ThreadedMatchesReferenceOnPartialBlocks) {
  const int64_t rows = 3, K = 100, N = 37, bn = 16, bk = 32;  // last blocks partial both ways
  const auto x = random_normal(rows * K, 21);
  const auto w_float = random_normal(N * K, 22, 0.05f);
  const int64_t nb = (N + bn - 1) / bn, kb = (K + bk - 1) / bk;
  std::vector<float> scale(nb * kb);
  for (int64_t i = 0; i < nb * kb; ++i) scale[i] = 0.0002f * (1 + i % 7);
  std::vector<uint8_t> w(N * K);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < K; ++k) w[n * K + k] = f32_to_e4m3(w_float[n * K + k] / scale[(n / bn) * kb + k / bk]);
  const auto bias = random_normal(N, 23);
  std::vector<float> y(rows * N), y_ref(rows * N);
  Fp8BlockLinearArgs args;
  args.x = x.data();
  args.weight = w.data();
  args.weight_scale = scale.data();
  args.block_n = bn;
  args.block_k = bk;
  args.bias = bias.data();
  args.y = y.data();
  args.num_rows = rows;
  args.in_features = K;
  args.out_features = N;
  ASSERT_TRUE(fp8_block_linear(args).is_ok());
  args.y = y_ref.data();
  ASSERT_TRUE(fp8_block_linear_ref(args).is_ok());
  EXPECT_LE(max_abs_diff(y, y_ref), 1e-5f * (1.0f + max_abs(y_ref)));
}

TEST(Fp8BlockKernelTest, EachGroupOfATokenHasItsOwnScale) {
  // Group 0 holds a large value, group 1 small ones: a per-token scale would flush group 1.
  std::vector<float> x = {400.0f, 1.0f, 0.001f, 0.002f};
  Fp8BlockLinearArgs args;
  args.x = x.data();
  args.block_k = 2;
  args.num_rows = 1;
  args.in_features = 4;
  // The quantisation reads only the activations (the GPU tests call it so); the linear needs its weight.
  std::vector<uint8_t> xq(4);
  std::vector<float> s(2);
  ASSERT_TRUE(fp8_block_quantize_ref(args, xq.data(), s.data()).is_ok());
  EXPECT_EQ(fp8_block_linear_ref(args).code(), StatusCode::kInvalidArgument);
  EXPECT_FLOAT_EQ(s[0], round_to_f16_saturated(400.0f) / 448.0f);
  EXPECT_FLOAT_EQ(s[1], round_to_f16_saturated(0.002f) / 448.0f);
  EXPECT_EQ(xq[3], 0x7E);  // the group's amax maps to 448
  EXPECT_NE(xq[2], 0);
  std::vector<float> zeros(4, 0.0f);
  args.x = zeros.data();
  ASSERT_TRUE(fp8_block_quantize_ref(args, xq.data(), s.data()).is_ok());
  EXPECT_EQ(s[0], kFp8BlockAmaxFloor / 448.0f);  // vLLM's floor, no division by zero
}

TEST(Fp8BlockConfigTest, ReadsBothFormsAndRefusesTheRestNamingTheField) {
  auto hf = parse_quant_config(
      R"({"quant_method": "fp8", "activation_scheme": "dynamic", "fmt": "e4m3", "weight_block_size": [128, 128],
          "modules_to_not_convert": ["mlp.gate"]})");
  ASSERT_TRUE(hf.is_ok()) << hf.status().to_string();
  EXPECT_EQ(hf->scheme, QuantScheme::kFp8Block);
  EXPECT_EQ(hf->fp8.block_n, 128);
  EXPECT_EQ(hf->fp8.block_scale_name, "weight_scale_inv");
  EXPECT_TRUE(hf->is_ignored("model.layers.3.mlp.gate"));
  auto per_tensor = parse_quant_config(R"({"quant_method": "fp8", "activation_scheme": "static"})");
  ASSERT_TRUE(per_tensor.is_ok()) << per_tensor.status().to_string();
  EXPECT_EQ(per_tensor->scheme, QuantScheme::kFp8Dynamic);
  EXPECT_TRUE(per_tensor->fp8.static_input_scale);
  auto ct = parse_quant_config(R"({"quant_method": "compressed-tensors", "format": "float-quantized",
      "config_groups": {"g": {"targets": ["Linear"],
        "weights": {"num_bits": 8, "type": "float", "strategy": "block", "block_structure": [128, 64]},
        "input_activations": {"num_bits": 8, "type": "float", "strategy": "group", "group_size": 64,
                              "dynamic": true}}}})");
  ASSERT_TRUE(ct.is_ok()) << ct.status().to_string();
  EXPECT_EQ(ct->scheme, QuantScheme::kFp8Block);
  EXPECT_EQ(ct->fp8.block_k, 64);
  EXPECT_EQ(ct->fp8.block_scale_name, "weight_scale");

  for (const auto& [json, needle] : std::vector<std::pair<std::string, std::string>>{
           {R"({"quant_method": "fp8", "fmt": "e5m2", "weight_block_size": [128, 128]})", ".fmt is 'e5m2'"},
           {R"({"quant_method": "fp8", "scale_fmt": "ue8m0", "weight_block_size": [128, 128]})", ".scale_fmt"},
           {R"({"quant_method": "fp8", "activation_scheme": "static", "weight_block_size": [128, 128]})",
            ".activation_scheme is 'static'"},
           {R"({"quant_method": "fp8", "weight_block_size": [128]})", ".weight_block_size is [128]"},
           {R"({"quant_method": "fp8", "weight_block_size": [0, 128]})", ".weight_block_size"},
           {R"({"quant_method": "compressed-tensors", "format": "float-quantized", "config_groups": {"g": {
              "weights": {"num_bits": 8, "type": "float", "strategy": "block", "block_structure": [128, 128]},
              "input_activations": {"num_bits": 8, "type": "float", "strategy": "group", "group_size": 64,
                                    "dynamic": true}}}})",
            "input_activations.group_size is 64"},
       }) {
    auto r = parse_quant_config(json);
    ASSERT_FALSE(r.is_ok()) << json;
    EXPECT_NE(r.status().message().find(needle), std::string::npos) << r.status().message();
  }
}

TEST(Fp8BlockFormatTest, RefusesAScaleOfTheWrongShapeNamingIt) {
  const auto dir = std::filesystem::temp_directory_path() / ("crosspoint_fp8_block_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const int64_t N = 40, K = 64;
  std::vector<uint8_t> w(N * K, 0x38), scale_bytes(1 * 2 * sizeof(float), 0);  // N = 40 needs 2 row blocks
  ASSERT_TRUE(write_safetensors((dir / "model.safetensors").string(),
                                {{"layer.weight", DType::kF8E4M3, {N, K}, w},
                                 {"layer.weight_scale_inv", DType::kF32, {1, 2}, scale_bytes}})
                  .is_ok());
  auto tensors = SafetensorsModel::open_dir(dir.string());
  ASSERT_TRUE(tensors.is_ok());
  ModelConfig config;
  config.quantization_config_json = R"({"quant_method": "fp8", "weight_block_size": [32, 32]})";
  LinearWeightRequest r;
  r.tensors = tensors->get();
  r.config = &config;
  r.prefix = "layer";
  r.in_features = K;
  r.out_features = N;
  auto layer = fp8_block_linear_weight_format()->load(r);
  ASSERT_FALSE(layer.is_ok());
  EXPECT_NE(layer.status().message().find("layer.weight_scale_inv has shape [1, 2] but config.json implies [2, 2]"),
            std::string::npos)
      << layer.status().message();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace crosspoint
