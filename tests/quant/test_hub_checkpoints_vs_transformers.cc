// Tiny checkpoints in the quantised layouts hub models ship (made by compressed-tensors and to
// AutoAWQ's layout: tests/fixtures/model/make_quantized_checkpoints.py), loaded through
// quantized_linear_weight_formats(), against transformers' fp32 logits for every position.
#include <gtest/gtest.h>

#include <cmath>

#include "model/model.h"
#include "model/model_test_util.h"
#include "quant/gptq_linear_weight.h"

namespace crosspoint {
namespace {

struct HubCheckpoint {
  const char* fixture;
  const char* format;  // Model::weight_format_name()
  // Max |logit - transformers'|: the dense fixtures' 1e-3. Both sides compute in f32 on the same
  // dequantised weights (bf16 scales are exact in fp16 at these magnitudes) and, for FP8,
  // quantise fp16(x) / input_scale to e4m3 alike; measured 1e-6 to 1.2e-5 (the printed line).
  float tolerance;
};

void PrintTo(const HubCheckpoint& c, std::ostream* os) { *os << c.fixture; }

class HubCheckpointVsTransformers : public ::testing::TestWithParam<HubCheckpoint> {};

TEST_P(HubCheckpointVsTransformers, PrefillLogitsOfEveryPosition) {
  const HubCheckpoint& c = GetParam();
  ModelLoadOptions options;
  options.linear_formats = quantized_linear_weight_formats();
  auto model = Model::load(testing::model_fixture_dir(c.fixture), options);
  ASSERT_TRUE(model.is_ok()) << model.status().to_string();
  EXPECT_EQ((*model)->weight_format_name(), c.format);
  const testing::TransformersReference ref = testing::load_reference(c.fixture);
  const int64_t n = static_cast<int64_t>(ref.token_ids.size()), V = ref.vocab_size;
  CpuKvCache cache((*model)->kv_cache_shape(8, 4));
  testing::BatchBuilder builder(1, 8, 4);
  std::vector<float> logits(n * V);
  ASSERT_TRUE((*model)->forward(builder.build({{0, ref.token_ids}}, true), cache, logits.data()).is_ok());
  float worst = 0.0f;
  for (int64_t i = 0; i < n * V; ++i) worst = std::max(worst, std::fabs(logits[i] - ref.logits[i]));
  EXPECT_LE(worst, c.tolerance) << c.fixture;
  std::printf("[ logits   ] %s: max |crosspoint - transformers| %.6f\n", c.fixture, worst);
}

INSTANTIATE_TEST_SUITE_P(TinyCheckpoints, HubCheckpointVsTransformers,
                         ::testing::Values(HubCheckpoint{"qwen2_w4a16_packed_g64", "w4a16-g64", 1e-3f},
                                           HubCheckpoint{"llama_w4a16_packed_asym_channel", "w4a16-g64", 1e-3f},
                                           HubCheckpoint{"qwen2_awq_gemm_g32", "w4a16-g32", 1e-3f},
                                           HubCheckpoint{"llama_w8a8_fp8_static", "w8a8-fp8-static", 1e-3f},
                                           HubCheckpoint{"qwen2_w8a8_fp8_block32", "w8a8-fp8-block32x32", 1e-3f},
                                           HubCheckpoint{"llama_w8a8_fp8_block32_ct", "w8a8-fp8-block32x32", 1e-3f},
                                           HubCheckpoint{"qwen2_w8a8_int8", "w8a8-int8", 1e-3f}));

}  // namespace
}  // namespace crosspoint
