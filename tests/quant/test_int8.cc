// W8A8-INT8: the activation quantisation (vLLM's rounding and scale), the threaded kernel
// against the reference, the weight quantiser (compressed-tensors' rule), and
// `quantize --scheme w8a8-int8` end to end on a tiny checkpoint. The loader against
// transformers: test_hub_checkpoints_vs_transformers.cc (qwen2_w8a8_int8).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "kernels/f16_rounding.h"
#include "kernels/int8.h"
#include "model/model.h"
#include "model/model_test_util.h"
#include "quant/gptq_linear_weight.h"
#include "quant/int8_quantizer.h"
#include "quant/quant_config.h"
#include "quant/quant_test_util.h"
#include "quant/quantize_model.h"

namespace crosspoint {
namespace {

using quant_testing::max_abs;
using quant_testing::max_abs_diff;
using quant_testing::random_normal;

TEST(Int8KernelTest, RoundsHalfToEvenAndClamps) {
  EXPECT_EQ(f32_to_int8_rn(2.5f), 2);
  EXPECT_EQ(f32_to_int8_rn(3.5f), 4);
  EXPECT_EQ(f32_to_int8_rn(-2.5f), -2);
  EXPECT_EQ(f32_to_int8_rn(300.0f), 127);
  EXPECT_EQ(f32_to_int8_rn(-300.0f), -128);
  EXPECT_EQ(f32_to_int8_rn(NAN), 0);
}

TEST(Int8KernelTest, ActivationsQuantisePerTokenFromTheirFp16Value) {
  // Row 0: amax 2 -> scale 2/127, 1.0 -> rint(63.5) = 64 (even); row 1 all zero.
  const std::vector<float> x = {2.0f, 1.0f, -0.5f, 0.0f, 0.0f, 0.0f};
  Int8LinearArgs args;
  args.x = x.data();
  args.num_rows = 2;
  args.in_features = 3;
  // The quantisation reads only the activations (the GPU tests call it so); the linear needs its weight.
  std::vector<int8_t> xq(6);
  std::vector<float> s(2);
  ASSERT_TRUE(int8_quantize_activations_ref(args, xq.data(), s.data()).is_ok());
  EXPECT_EQ(int8_linear_ref(args).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s[0], 2.0f / 127.0f);
  EXPECT_EQ(xq[0], 127);
  EXPECT_EQ(xq[1], 64);
  EXPECT_EQ(xq[2], -32);  // rint(-31.75)
  EXPECT_EQ(s[1], 0.0f);
  EXPECT_EQ(xq[3], 0);
  args.input_scale = 0.25f;  // static: rint(x / 0.25)
  ASSERT_TRUE(int8_quantize_activations_ref(args, xq.data(), s.data()).is_ok());
  EXPECT_EQ(s[0], 0.25f);
  EXPECT_EQ(xq[0], 8);
  EXPECT_EQ(xq[2], -2);
}

TEST(Int8KernelTest, ThreadedEqualsReferenceBitForBit) {
  const int64_t rows = 4, K = 77, N = 29;
  const auto x = random_normal(rows * K, 31);
  const auto wf = random_normal(N * K, 32, 0.05f);
  const Int8Quantized q = quantize_int8_per_channel(wf.data(), N, K);
  const auto bias = random_normal(N, 33);
  std::vector<float> y(rows * N), y_ref(rows * N);
  for (float input_scale : {0.0f, 0.02f}) {
    Int8LinearArgs args{x.data(), 0, q.weight.data(), q.scale.data(), bias.data(), y.data(), rows, K, N, input_scale};
    ASSERT_TRUE(int8_linear(args).is_ok());
    args.y = y_ref.data();
    ASSERT_TRUE(int8_linear_ref(args).is_ok());
    EXPECT_EQ(y, y_ref) << "input_scale " << input_scale;
  }
  EXPECT_EQ(int8_linear({x.data(), 0, q.weight.data(), q.scale.data(), nullptr, y.data(), rows, K, N, -1.0f}).code(),
            StatusCode::kInvalidArgument);
}

TEST(Int8QuantizerTest, ScaleIsAmaxOver127AndAHalf) {
  const std::vector<float> w = {1.0f, -1.0f, 0.5f, 0.0f};  // one row
  const Int8Quantized q = quantize_int8_per_channel(w.data(), 1, 4);
  EXPECT_EQ(q.scale[0], 1.0f / 127.5f);
  // 1 / fp32(1 / 127.5) is 127.49999 in fp32, as in the library's division: the amax lands on
  // 127, never on the clamp.
  EXPECT_EQ(q.weight[0], 127);
  EXPECT_EQ(q.weight[1], -127);
  EXPECT_EQ(q.weight[2], 64);  // rint(63.75)
  EXPECT_EQ(q.weight[3], 0);
}

TEST(Int8QuantizeModelTest, WritesACompressedTensorsCheckpointThatLoadsAndTracksTheDenseModel) {
  const std::string dense_dir = testing::model_fixture_dir("qwen2_untied_bf16");
  const auto out = std::filesystem::temp_directory_path() / ("crosspoint_int8_" + std::to_string(::getpid()));
  QuantizeModelOptions options;
  options.model_dir = dense_dir;
  options.out_dir = out.string();
  options.scheme = QuantizeScheme::kW8A8Int8;
  options.overwrite = true;
  ASSERT_TRUE(quantize_model(options).is_ok());
  ModelLoadOptions load;
  load.linear_formats = quantized_linear_weight_formats();
  auto int8 = Model::load(out.string(), load);
  ASSERT_TRUE(int8.is_ok()) << int8.status().to_string();
  EXPECT_EQ((*int8)->weight_format_name(), "w8a8-int8");
  auto parsed = parse_quant_config((*int8)->config().quantization_config_json);
  ASSERT_TRUE(parsed.is_ok()) << parsed.status().to_string();
  EXPECT_EQ(parsed->scheme, QuantScheme::kInt8);
  EXPECT_TRUE(parsed->is_ignored("lm_head"));
  auto dense = Model::load(dense_dir);
  ASSERT_TRUE(dense.is_ok());
  const testing::TransformersReference ref = testing::load_reference("qwen2_untied_bf16");
  const int64_t n = static_cast<int64_t>(ref.token_ids.size()), V = ref.vocab_size;
  std::vector<float> a(n * V), b(n * V);
  for (const auto& [model, logits] : {std::pair{int8->get(), &a}, std::pair{dense->get(), &b}}) {
    CpuKvCache cache(model->kv_cache_shape(8, 4));
    testing::BatchBuilder builder(1, 8, 4);
    ASSERT_TRUE(model->forward(builder.build({{0, ref.token_ids}}, true), cache, logits->data()).is_ok());
  }
  // int8 weights and activations on a random tiny model: a few percent of the logit scale.
  EXPECT_LE(max_abs_diff(a, b), 0.05f * max_abs(b));
  EXPECT_GT(max_abs_diff(a, b), 0.0f) << "quantisation changed nothing";
  std::filesystem::remove_all(out);
}

}  // namespace
}  // namespace crosspoint
