// ModelLoadOptions::activation_dtype on the CPU: the GPU's fp16 flow and the same places rounded
// to bf16 (--dtype bfloat16), on the tiny bf16 checkpoint against its transformers reference
// (f32 math) and against the unrounded flow.
#include <cmath>
#include <cstring>

#include "model_test_util.h"

namespace crosspoint {
namespace {

using testing::BatchBuilder;
using testing::load_reference;
using testing::model_fixture_dir;

constexpr char kCheckpoint[] = "qwen2_untied_bf16";

// Prefill logits of every position of the reference's tokens with the activations in `dtype`.
std::vector<float> prefill_logits(ActivationDtype dtype, const testing::TransformersReference& ref) {
  ModelLoadOptions options;
  options.activation_dtype = dtype;
  auto model = Model::load(model_fixture_dir(kCheckpoint), options);
  EXPECT_TRUE(model.is_ok()) << model.status().to_string();
  if (!model.is_ok()) return {};
  EXPECT_EQ(model.value()->activation_dtype(), dtype);
  CpuKvCache cache(model.value()->kv_cache_shape(64, 4));
  BatchBuilder builder(1, 16, 4);
  const ForwardBatch batch = builder.build({{0, ref.token_ids}}, /*all_logits=*/true);
  std::vector<float> logits(ref.token_ids.size() * ref.vocab_size);
  EXPECT_TRUE(model.value()->forward(batch, cache, logits.data()).is_ok());
  return logits;
}

float max_diff(const std::vector<float>& a, const std::vector<float>& b) {
  float worst = 0.0f;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::fabs(a[i] - b[i]));
  return worst;
}

TEST(ActivationDtype, Bf16FlowRoundsLikeBf16AndStaysNearTheReference) {
  const testing::TransformersReference ref = load_reference(kCheckpoint);
  const std::vector<float> f32 = prefill_logits(ActivationDtype::kFloat32, ref);
  const std::vector<float> f16 = prefill_logits(ActivationDtype::kFloat16, ref);
  const std::vector<float> bf16 = prefill_logits(ActivationDtype::kBFloat16, ref);
  ASSERT_EQ(f32.size(), ref.logits.size());
  ASSERT_EQ(f16.size(), f32.size());
  ASSERT_EQ(bf16.size(), f32.size());

  // The logits are themselves an activation: every one a bf16 (resp. fp16) value.
  for (float v : bf16) {
    uint32_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    ASSERT_EQ(bits & 0xffffu, 0u) << v << " is not a bf16 value";
  }
  for (float v : f16) ASSERT_EQ(f16_to_f32(f32_to_f16(v)), v) << v << " is not an fp16 value";

  // bf16 keeps 8 significant bits to fp16's 11: its flow moves the logits further from the
  // unrounded one, and both stay near transformers' f32 logits.
  const float f32_vs_ref = max_diff(f32, ref.logits), f16_vs_f32 = max_diff(f16, f32),
              bf16_vs_f32 = max_diff(bf16, f32);
  std::printf("max |logit difference|: f32 flow vs transformers %.2e, fp16 flow vs f32 %.2e, bf16 flow vs f32 %.2e\n",
              f32_vs_ref, f16_vs_f32, bf16_vs_f32);
  EXPECT_LE(f32_vs_ref, 1e-3f);
  EXPECT_GT(f16_vs_f32, 0.0f);
  EXPECT_GT(bf16_vs_f32, 2.0f * f16_vs_f32);
  EXPECT_LE(bf16_vs_f32, 0.1f);
}

}  // namespace
}  // namespace crosspoint
