// Logits of the tiny random-weight checkpoints against transformers (fixtures made by
// tests/fixtures/model/make_tiny_models.py): full prefill, prefill then decode, chunked
// prefill, and mixed batches of several sequences.
#include <cmath>

#include "model_test_util.h"

namespace crosspoint {
namespace {

using testing::BatchBuilder;
using testing::load_reference;
using testing::model_fixture_dir;
using testing::SeqChunk;

constexpr float kTolerance = 1e-3f;  // max abs logit difference, fp32 math

float max_diff(const float* a, const float* b, int64_t n) {
  float worst = 0.0f;
  for (int64_t i = 0; i < n; ++i) worst = std::max(worst, std::fabs(a[i] - b[i]));
  return worst;
}

class ModelVsTransformers : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    auto loaded = Model::load(model_fixture_dir(GetParam()));
    ASSERT_TRUE(loaded.is_ok()) << loaded.status().to_string();
    model_ = std::move(loaded).value();
    ref_ = load_reference(GetParam());
    ASSERT_EQ(model_->vocab_size(), ref_.vocab_size);
  }
  std::unique_ptr<CpuKvCache> make_cache(int32_t block_size = 4) {
    return std::make_unique<CpuKvCache>(model_->kv_cache_shape(64, block_size));
  }
  std::vector<int32_t> tokens(size_t begin, size_t end) const {
    return {ref_.token_ids.begin() + begin, ref_.token_ids.begin() + end};
  }

  std::unique_ptr<Model> model_;
  testing::TransformersReference ref_;
};

TEST_P(ModelVsTransformers, PrefillLogitsOfEveryPosition) {
  auto cache = make_cache();
  BatchBuilder builder(1, 16, 4);
  const int64_t n = static_cast<int64_t>(ref_.token_ids.size());
  const ForwardBatch batch = builder.build({{0, ref_.token_ids}}, /*all_logits=*/true);
  std::vector<float> logits(n * ref_.vocab_size);
  ASSERT_TRUE(model_->forward(batch, *cache, logits.data()).is_ok());
  for (int64_t t = 0; t < n; ++t)
    EXPECT_LE(max_diff(logits.data() + t * ref_.vocab_size, ref_.logits_at(t), ref_.vocab_size), kTolerance)
        << "position " << t;
}

TEST_P(ModelVsTransformers, PrefillThenDecodeSteps) {
  auto cache = make_cache();
  BatchBuilder builder(1, 16, 4);
  const size_t prompt = 11;
  std::vector<float> logits(ref_.vocab_size);
  ASSERT_TRUE(model_->forward(builder.build({{0, tokens(0, prompt)}}, false), *cache, logits.data()).is_ok());
  EXPECT_LE(max_diff(logits.data(), ref_.logits_at(prompt - 1), ref_.vocab_size), kTolerance);
  for (size_t t = prompt; t < ref_.token_ids.size(); ++t) {
    ASSERT_TRUE(model_->forward(builder.build({{0, tokens(t, t + 1)}}, false), *cache, logits.data()).is_ok());
    EXPECT_LE(max_diff(logits.data(), ref_.logits_at(t), ref_.vocab_size), kTolerance) << "decode position " << t;
  }
}

TEST_P(ModelVsTransformers, ChunkedPrefillMatches) {
  auto cache = make_cache(/*block_size=*/3);
  BatchBuilder builder(1, 16, 3);
  const size_t bounds[] = {0, 4, 5, 11, 15};
  std::vector<float> logits(11 * ref_.vocab_size);
  for (size_t c = 0; c + 1 < std::size(bounds); ++c) {
    ASSERT_TRUE(
        model_->forward(builder.build({{0, tokens(bounds[c], bounds[c + 1])}}, true), *cache, logits.data()).is_ok());
    for (size_t t = bounds[c]; t < bounds[c + 1]; ++t)
      EXPECT_LE(max_diff(logits.data() + (t - bounds[c]) * ref_.vocab_size, ref_.logits_at(t), ref_.vocab_size),
                kTolerance)
          << "chunk " << c << " position " << t;
  }
}

TEST_P(ModelVsTransformers, MixedBatchEqualsOneAtATime) {
  // Three sequences over prefixes of the reference tokens, with different lengths, run as
  // prefill chunks mixed with decodes; each logit row must equal the single-sequence run.
  const int64_t V = ref_.vocab_size;
  auto batched_cache = make_cache();
  BatchBuilder batched(3, 16, 4);
  std::vector<float> step1(3 * V), step2(3 * V);
  ASSERT_TRUE(model_
                  ->forward(batched.build({{0, tokens(0, 9)}, {1, tokens(0, 4)}, {2, tokens(0, 1)}}, false),
                            *batched_cache, step1.data())
                  .is_ok());
  ASSERT_TRUE(model_
                  ->forward(batched.build({{2, tokens(1, 6)}, {0, tokens(9, 10)}, {1, tokens(4, 5)}}, false),
                            *batched_cache, step2.data())
                  .is_ok());

  // The same work one sequence at a time, each in a fresh cache.
  auto single = [&](const std::vector<std::vector<int32_t>>& steps) {
    auto cache = make_cache();
    BatchBuilder builder(1, 16, 4);
    std::vector<float> logits(V);
    for (const auto& step : steps)
      EXPECT_TRUE(model_->forward(builder.build({{0, step}}, false), *cache, logits.data()).is_ok());
    return logits;
  };
  const auto seq0_step1 = single({tokens(0, 9)});
  const auto seq0_step2 = single({tokens(0, 9), tokens(9, 10)});
  const auto seq1_step2 = single({tokens(0, 4), tokens(4, 5)});
  const auto seq2_step2 = single({tokens(0, 1), tokens(1, 6)});
  EXPECT_LE(max_diff(step1.data(), seq0_step1.data(), V), 1e-5f);
  EXPECT_LE(max_diff(step2.data() + 0 * V, seq2_step2.data(), V), 1e-5f);
  EXPECT_LE(max_diff(step2.data() + 1 * V, seq0_step2.data(), V), 1e-5f);
  EXPECT_LE(max_diff(step2.data() + 2 * V, seq1_step2.data(), V), 1e-5f);
  // And against transformers.
  EXPECT_LE(max_diff(step2.data() + 0 * V, ref_.logits_at(5), V), kTolerance);
  EXPECT_LE(max_diff(step2.data() + 1 * V, ref_.logits_at(9), V), kTolerance);
  EXPECT_LE(max_diff(step2.data() + 2 * V, ref_.logits_at(4), V), kTolerance);
}

INSTANTIATE_TEST_SUITE_P(TinyCheckpoints, ModelVsTransformers,
                         ::testing::Values("qwen2_tied_f32", "llama_untied_f32", "qwen2_untied_bf16", "llama_tied_f16",
                                           "llama_rope_llama3_f32", "qwen3_untied_f32", "qwen2_rope_yarn_f32",
                                           "mistral_headdim_f32"));

}  // namespace
}  // namespace crosspoint
