// Tensor parallelism on the CPU: the plan's shares (vLLM's divisibility rules, KV heads
// replicated past their count), and the split model's logits against the whole model's on the
// tiny dense checkpoints, over a prefill and decode steps of two sequences.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <thread>

#include "model/in_process_all_reduce.h"
#include "model/linear_shard.h"
#include "model/tensor_parallel_model.h"
#include "tensor_parallel_test_util.h"

namespace crosspoint {
namespace {

using testing::BatchBuilder;
using testing::expect_close;
using testing::model_fixture_dir;
using testing::split_model_logits;
using testing::whole_model_logits;

ModelConfig shape(int64_t heads, int64_t kv_heads, int64_t intermediate, int64_t vocab) {
  ModelConfig c;
  c.num_attention_heads = heads;
  c.num_key_value_heads = kv_heads;
  c.intermediate_size = intermediate;
  c.vocab_size = vocab;
  return c;
}

TEST(TensorParallelPlan, SplitsHeadsColumnsAndVocabulary) {
  auto plan = plan_tensor_parallel(shape(28, 4, 18944, 152064), 2);  // Qwen2.5-7B
  ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
  ASSERT_EQ(plan->size(), 2u);
  EXPECT_EQ((*plan)[1].q_heads.begin, 14);
  EXPECT_EQ((*plan)[1].kv_heads.begin, 2);
  EXPECT_EQ((*plan)[1].kv_heads.end, 4);
  EXPECT_EQ((*plan)[1].intermediate.begin, 9472);
  EXPECT_EQ((*plan)[1].vocab.begin, 76032);
  EXPECT_EQ((*plan)[1].vocab.end, 152064);
}

TEST(TensorParallelPlan, ReplicatesKvHeadsPastTheirCount) {
  auto plan = plan_tensor_parallel(shape(8, 2, 64, 10), 4);
  ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
  const int64_t expected[] = {0, 0, 1, 1};
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ((*plan)[r].kv_heads.begin, expected[r]) << "rank " << r;
    EXPECT_EQ((*plan)[r].kv_heads.size(), 1);
    EXPECT_EQ((*plan)[r].q_heads.begin, 2 * r);
  }
  EXPECT_EQ((*plan)[3].vocab.begin, 9);  // ceil(10 / 4) rows a rank, the last one short
  EXPECT_EQ((*plan)[3].vocab.end, 10);
}

TEST(TensorParallelPlan, RefusesSizesThatDoNotDivide) {
  auto heads = plan_tensor_parallel(shape(9, 3, 1536, 49152), 2);  // SmolLM2-135M
  ASSERT_FALSE(heads.is_ok());
  EXPECT_NE(heads.status().message().find("attention heads (9)"), std::string::npos) << heads.status().message();
  EXPECT_TRUE(plan_tensor_parallel(shape(9, 3, 1536, 49152), 3).is_ok());
  auto kv = plan_tensor_parallel(shape(12, 3, 64, 10), 4);
  ASSERT_FALSE(kv.is_ok());
  EXPECT_NE(kv.status().message().find("KV heads (3)"), std::string::npos) << kv.status().message();
  auto inter = plan_tensor_parallel(shape(4, 4, 90, 10), 4);
  ASSERT_FALSE(inter.is_ok());
  EXPECT_NE(inter.status().message().find("intermediate size (90)"), std::string::npos);
  EXPECT_FALSE(plan_tensor_parallel(shape(4, 4, 64, 10), 0).is_ok());
}

TEST(InProcessAllReduce, EveryRankGetsTheSumInRankOrder) {
  constexpr int32_t kWorld = 3;
  constexpr int64_t kN = 1000;
  InProcessAllReduce reduce(kWorld);
  std::vector<std::vector<float>> data(kWorld, std::vector<float>(kN));
  for (int32_t r = 0; r < kWorld; ++r)
    for (int64_t i = 0; i < kN; ++i) data[r][i] = (r == 0 ? 1e8f : 1.0f) * static_cast<float>(i % 7 + 1) / (r + 1);
  std::vector<float> once(kN), twice(kN);
  for (int64_t i = 0; i < kN; ++i) {
    once[i] = (data[0][i] + data[1][i]) + data[2][i];
    twice[i] = (once[i] + once[i]) + once[i];
  }
  std::vector<std::vector<float>> after_one(kWorld);
  {
    std::vector<std::jthread> threads;
    for (int32_t r = 0; r < kWorld; ++r)
      threads.emplace_back([&, r] {
        reduce.sum(r, data[r].data(), kN);
        after_one[r] = data[r];
        reduce.sum(r, data[r].data(), kN);  // back to back: the second call must not see the first's result
      });
  }
  for (int32_t r = 0; r < kWorld; ++r) {
    EXPECT_EQ(after_one[r], once) << "rank " << r;
    EXPECT_EQ(data[r], twice) << "rank " << r;
  }
}

TEST(LinearShard, RefusesACutOutsideTheWeight) {
  std::vector<float> w(6 * 4, 1.0f);
  DenseLinearWeight dense(w.data(), DType::kF32, 6, 4, {});
  auto outside = shard_linear_weight(dense, ShardAxis::kOutput, {4, 8}, true, "w");
  ASSERT_FALSE(outside.is_ok());
  EXPECT_NE(outside.status().message().find("outside the 6 output features"), std::string::npos);
  EXPECT_FALSE(shard_linear_weight(dense, ShardAxis::kInput, {2, 2}, true, "w").is_ok());
}

TEST(LinearShard, ColumnAndRowShardsOfADenseWeightAddUpToIt) {
  constexpr int64_t N = 5, K = 6;
  std::vector<uint16_t> w(N * K);
  for (int64_t i = 0; i < N * K; ++i) w[i] = f32_to_f16(0.25f * static_cast<float>((i * 7) % 11) - 1.0f);
  const std::vector<float> bias = {0.5f, -1.0f, 2.0f, 0.0f, 1.5f};
  DenseLinearWeight dense(w.data(), DType::kF16, N, K, bias);
  const std::vector<float> x = {1, 2, -1, 0.5f, 3, -2, 0, 1, 1, 1, -1, 2};  // [2, K]
  std::vector<float> y(2 * N), cols(2 * 3), lo(2 * N), hi(2 * N);
  ASSERT_TRUE(dense.forward(x.data(), 2, 0, y.data()).is_ok());
  auto column = shard_linear_weight(dense, ShardAxis::kOutput, {2, 5}, false, "w");
  ASSERT_TRUE(column.is_ok()) << column.status().to_string();
  ASSERT_TRUE((*column)->forward(x.data(), 2, 0, cols.data()).is_ok());
  for (int64_t m = 0; m < 2; ++m)
    for (int64_t n = 0; n < 3; ++n) EXPECT_EQ(cols[m * 3 + n], y[m * N + 2 + n]);
  auto first = shard_linear_weight(dense, ShardAxis::kInput, {0, 4}, true, "w");
  auto second = shard_linear_weight(dense, ShardAxis::kInput, {4, 6}, false, "w");
  ASSERT_TRUE(first.is_ok() && second.is_ok());
  ASSERT_TRUE((*first)->forward(x.data(), 2, K, lo.data()).is_ok());
  ASSERT_TRUE((*second)->forward(x.data() + 4, 2, K, hi.data()).is_ok());
  for (int64_t i = 0; i < 2 * N; ++i) EXPECT_NEAR(lo[i] + hi[i], y[i], 1e-5f) << i;
}

class SplitDenseCheckpoint : public ::testing::TestWithParam<const char*> {};

TEST_P(SplitDenseCheckpoint, LogitsEqualTheWholeModelsToFp32Rounding) {
  auto model = Model::load(model_fixture_dir(GetParam()));
  ASSERT_TRUE(model.is_ok()) << model.status().to_string();
  const std::vector<float> whole = whole_model_logits(**model);
  for (int32_t world : {2, 4}) {
    auto tp = TensorParallelModel::create(**model, world);
    if (!tp.is_ok()) {  // only the sizes vLLM would refuse too
      EXPECT_EQ(tp.status().code(), StatusCode::kInvalidArgument);
      EXPECT_TRUE((*model)->config().num_attention_heads % world != 0 ||
                  (*model)->config().intermediate_size % world != 0)
          << tp.status().to_string();
      continue;
    }
    const std::vector<float> split = split_model_logits(**tp);
    expect_close(whole, split, 2e-5f, std::string(GetParam()) + " at " + std::to_string(world) + " ranks");
    EXPECT_EQ(split, split_model_logits(**tp)) << "run to run";
  }
}

INSTANTIATE_TEST_SUITE_P(TinyCheckpoints, SplitDenseCheckpoint,
                         ::testing::Values("qwen2_tied_f32", "llama_untied_f32", "qwen2_untied_bf16", "llama_tied_f16",
                                           "qwen3_untied_f32", "mistral_headdim_f32", "llama_rope_llama3_f32",
                                           "qwen2_rope_yarn_f32"));

TEST(SplitModel, AnErrorOnEveryRankIsReportedAndTheNextStepRuns) {
  auto model = Model::load(model_fixture_dir("qwen2_tied_f32"));
  ASSERT_TRUE(model.is_ok()) << model.status().to_string();
  auto tp = TensorParallelModel::create(**model, 2);
  ASSERT_TRUE(tp.is_ok()) << tp.status().to_string();
  CpuKvCache wrong((*model)->kv_cache_shape(64, 4, DType::kF32));  // the whole model's cache
  BatchBuilder builder(1, 16, 4);
  const ForwardBatch batch = builder.build({{0, {1, 2, 3}}}, true);
  std::vector<float> logits(3 * (*model)->vocab_size());
  EXPECT_EQ((*tp)->forward(batch, wrong, logits.data()).code(), StatusCode::kInvalidArgument);
  const std::vector<float> whole = whole_model_logits(**model);
  expect_close(whole, split_model_logits(**tp), 2e-5f, "after the error");
}

}  // namespace
}  // namespace crosspoint
