// Prompt logprobs on the CUDA runner (through the real engine, tiny fp16 checkpoint): every prompt
// position of the requests that ask gets the CPU model's logprob of the next prompt token within
// the fp16 logits tolerance of test_cuda_model.cc, with prefill chunks cut to a per-step limit of
// prompt rows (on top of one row per sequence in the CUDA model); asking changes no generated
// token (batch-invariant kernels, as the chunks differ); requests that do not ask get none.
// Every test skips without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>
#include <vector>

#include "engine/logprobs_collector.h"
#include "model/host_forward_batch.h"
#include "model/kv_cache.h"
#include "model_cuda/cuda_test_util.h"
#include "runner/token_logprobs.h"

namespace crosspoint {
namespace {

using cuda_testing::kEngineBlocks;
using cuda_testing::load_tiny_model;
using cuda_testing::sampling;
using cuda_testing::tiny_requests;
using cuda_testing::TinyPrecision;

constexpr double kLogitTolerance = 2e-2;  // test_cuda_logprobs.cc's fp16 bound, relative to the row's largest |logit|
constexpr int32_t kPromptRows = 8;        // prompt logprob rows per step: the longer prompts take several steps

struct Collected {
  std::vector<int32_t> tokens;
  std::vector<TokenLogprobs> prompt_logprobs;
  int num_prompt_logprob_updates = 0;
};

std::vector<Collected> run(const Model& cpu, bool enforce_eager, const std::vector<EngineRequest>& requests) {
  EngineConfig config = cuda_testing::engine_config();
  config.scheduler.max_prompt_logprob_rows = kPromptRows;
  cuda::CudaModelOptions options;
  options.max_num_tokens = config.scheduler.max_num_batched_tokens;
  options.max_num_seqs = config.scheduler.max_num_seqs;
  options.max_num_logits = config.scheduler.max_num_seqs + kPromptRows;
  options.max_model_len = config.scheduler.max_model_len;
  // Batch-invariant kernels: asking for prompt logprobs cuts prefill chunks differently, which must
  // not change a token (the default kernels' rounding may follow the batch's shape).
  options.batch_invariant = true;
  auto model = cuda::CudaModel::create(cpu, options);
  EXPECT_TRUE(model.is_ok()) << model.status().to_string();
  if (!model.is_ok()) return {};
  cuda::CudaRunnerOptions runner_options;
  runner_options.enforce_eager = enforce_eager;
  runner_options.num_kv_blocks = kEngineBlocks;
  auto runner = cuda::CudaModelRunner::create(std::move(model).value(), runner_options);
  EXPECT_TRUE(runner.is_ok()) << runner.status().to_string();
  if (!runner.is_ok()) return {};
  Engine engine(config, std::move(runner).value());
  std::vector<std::unique_ptr<testing::LogprobsCollector>> collectors;
  for (const EngineRequest& r : requests) {
    collectors.push_back(std::make_unique<testing::LogprobsCollector>());
    EXPECT_TRUE(engine.submit(r, collectors.back()->sink()).is_ok());
  }
  engine.start();
  std::vector<Collected> out;
  for (const auto& c : collectors) {
    EXPECT_TRUE(c->wait(120));
    out.push_back({c->tokens(), c->prompt_logprobs(), c->num_prompt_logprob_updates()});
  }
  engine.stop();
  return out;
}

// The CPU model's f32 logits at every position of `tokens`: [tokens.size(), vocab].
std::vector<float> cpu_logits(const Model& cpu, const std::vector<int32_t>& tokens) {
  constexpr int32_t kBlockSize = 16;
  const int32_t num_blocks = static_cast<int32_t>((tokens.size() + kBlockSize - 1) / kBlockSize);
  CpuKvCache cache(cpu.kv_cache_shape(num_blocks, kBlockSize));
  std::vector<int32_t> blocks(num_blocks);
  std::iota(blocks.begin(), blocks.end(), 0);
  HostForwardBatch batch;
  batch.clear(num_blocks);
  batch.add_sequence(tokens, /*num_cached=*/0, blocks, LogitsWanted::kAll);
  std::vector<float> logits(tokens.size() * static_cast<size_t>(cpu.vocab_size()));
  const Status status = cpu.forward(batch.view(), cache, logits.data());
  EXPECT_TRUE(status.is_ok()) << status.to_string();
  return logits;
}

std::vector<EngineRequest> requests() {
  auto reqs = tiny_requests({sampling(0.0f, 0, 1.0f, 0), sampling(1.0f, 40, 1.0f, 7), sampling(0.0f, 0, 1.0f, 0),
                             sampling(0.8f, 0, 0.9f, 8)});
  reqs[0].sampling.num_prompt_logprobs = 3;
  reqs[1].sampling.num_prompt_logprobs = 0;
  reqs[3].sampling.num_prompt_logprobs = 5;  // 78 prompt tokens: many cut steps
  return reqs;
}

class CudaPromptLogprobsTest : public ::testing::TestWithParam<bool> {};

TEST_P(CudaPromptLogprobsTest, FollowTheCpuModelAtEveryPromptPosition) {
  SKIP_WITHOUT_GPU();
  auto cpu = load_tiny_model(TinyPrecision::kFp16);
  ASSERT_NE(cpu, nullptr);
  const auto reqs = requests();
  const auto got = run(*cpu, GetParam(), reqs);
  ASSERT_EQ(got.size(), reqs.size());
  const size_t vocab = static_cast<size_t>(cpu->vocab_size());
  for (size_t i = 0; i < reqs.size(); ++i) {
    SCOPED_TRACE("request " + std::to_string(i));
    const EngineRequest& r = reqs[i];
    if (!r.sampling.wants_prompt_logprobs()) {
      EXPECT_TRUE(got[i].prompt_logprobs.empty());
      EXPECT_EQ(got[i].num_prompt_logprob_updates, 0);
      continue;
    }
    EXPECT_EQ(got[i].num_prompt_logprob_updates, 1);
    ASSERT_EQ(got[i].prompt_logprobs.size(), r.prompt_token_ids.size() - 1);
    const std::vector<float> logits = cpu_logits(*cpu, r.prompt_token_ids);
    for (size_t p = 0; p + 1 < r.prompt_token_ids.size(); ++p) {
      const float* row = logits.data() + p * vocab;
      double scale = 0.0;
      for (size_t v = 0; v < vocab; ++v) scale = std::max(scale, std::fabs(static_cast<double>(row[v])));
      const double tol = 2 * kLogitTolerance * scale;
      const TokenLogprobs want =
          compute_token_logprobs({row, vocab}, r.prompt_token_ids[p + 1], r.sampling.num_prompt_logprobs);
      const TokenLogprobs& lp = got[i].prompt_logprobs[p];
      EXPECT_EQ(lp.chosen.token_id, r.prompt_token_ids[p + 1]) << "position " << p;
      EXPECT_NEAR(lp.chosen.logprob, want.chosen.logprob, tol) << "position " << p;
      ASSERT_EQ(lp.top.size(), want.top.size());
      for (size_t k = 0; k < lp.top.size(); ++k)
        EXPECT_NEAR(lp.top[k].logprob, want.top[k].logprob, tol) << "position " << p << " rank " << k;
    }
  }
}

TEST_P(CudaPromptLogprobsTest, AskingForThemChangesNoToken) {
  SKIP_WITHOUT_GPU();
  auto cpu = load_tiny_model(TinyPrecision::kFp16);
  ASSERT_NE(cpu, nullptr);
  const auto with = requests();
  auto without = with;
  for (EngineRequest& r : without) r.sampling.num_prompt_logprobs = -1;
  const auto a = run(*cpu, GetParam(), with);
  const auto b = run(*cpu, GetParam(), without);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].tokens, b[i].tokens) << "request " << i;
}

INSTANTIATE_TEST_SUITE_P(GraphsAndEager, CudaPromptLogprobsTest, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "eager" : "graphs"; });

}  // namespace
}  // namespace crosspoint
