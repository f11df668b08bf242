// The checkpoints the GPU tests compare on, checked on the CPU (runs without a GPU): every
// precision is written, loads with the format the GPU path expects, and gives finite logits
// of a useful size (so the relative tolerances of test_cuda_model.cc mean something).
#include <gtest/gtest.h>

#include <cmath>

#include "model/model.h"
#include "model/model_test_util.h"
#include "model_cuda/tiny_checkpoints.h"
#include "quant/gptq_linear_weight.h"

namespace crosspoint {
namespace {

using cuda_testing::TinyCheckpoints;
using cuda_testing::TinyPrecision;

TEST(TinyCheckpointsTest, EveryPrecisionLoadsAndRunsOnTheCpu) {
  const std::pair<TinyPrecision, std::string> cases[] = {
      {TinyPrecision::kFp16, "bf16"},           {TinyPrecision::kFp8, "w8a8-fp8"},
      {TinyPrecision::kW4A16Rtn, "w4a16-g128"}, {TinyPrecision::kW4A16GptqActOrder, "w4a16-g128-act"},
      {TinyPrecision::kQwen3Fp16, "bf16"},      {TinyPrecision::kSmolLm2ShapeFp8, "w8a8-fp8"},
      {TinyPrecision::kW8A8Int8, "w8a8-int8"},  {TinyPrecision::kFp8Block128, "w8a8-fp8-block128x128"}};
  for (const auto& [precision, format] : cases) {
    auto dir = TinyCheckpoints::get().dir(precision);
    ASSERT_TRUE(dir.is_ok()) << dir.status().to_string();
    ModelLoadOptions options;
    options.linear_formats = quantized_linear_weight_formats();
    auto model = Model::load(*dir, options);
    ASSERT_TRUE(model.is_ok()) << model.status().to_string();
    EXPECT_EQ((*model)->weight_format_name(), format);
    testing::BatchBuilder builder(1, 4, 16);
    std::vector<int32_t> prompt;
    for (int32_t i = 0; i < 20; ++i) prompt.push_back((i * 37 + 1) % 512);
    const ForwardBatch batch = builder.build({{0, prompt}}, false);
    CpuKvCache cache((*model)->kv_cache_shape(4, 16));
    std::vector<float> logits(512);
    ASSERT_TRUE((*model)->forward(batch, cache, logits.data()).is_ok());
    float max_abs = 0.0f;
    for (float v : logits) {
      ASSERT_TRUE(std::isfinite(v));
      max_abs = std::max(max_abs, std::fabs(v));
    }
    EXPECT_GT(max_abs, 1.0f) << format;
    EXPECT_LT(max_abs, 100.0f) << format;
  }
}

}  // namespace
}  // namespace crosspoint
