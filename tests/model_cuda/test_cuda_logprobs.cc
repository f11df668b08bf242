// Logprobs on the CUDA runner (through the real engine, tiny fp16 checkpoint): rows that ask get
// them whether they are greedy, sampled on the GPU or sampled on the host, with graphs and
// eagerly; they follow the CPU model's logprobs of the same tokens within the fp16 logits
// tolerance of test_cuda_model.cc; a greedy row's chosen token is its own top-1 exactly (the host
// copy holds the very values the GPU argmax read); asking for them changes no token; rows that do
// not ask get none. Every test skips without a GPU.
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

using cuda_testing::kOutputTokens;
using cuda_testing::load_tiny_model;
using cuda_testing::sampling;
using cuda_testing::tiny_requests;
using cuda_testing::TinyPrecision;

// test_cuda_model.cc's fp16 bound on |gpu - cpu| per logit, relative to the row's largest |logit|;
// a logprob moves by at most twice the largest logit difference.
constexpr double kLogitTolerance = 2e-2;

struct Generated {
  std::vector<int32_t> tokens;
  std::vector<TokenLogprobs> logprobs;
  bool misaligned = false;
};

std::vector<Generated> run(const Model& cpu, bool sample_on_gpu, bool enforce_eager,
                           const std::vector<EngineRequest>& requests) {
  cuda::CudaRunnerOptions options;
  options.sample_on_gpu = sample_on_gpu;
  options.enforce_eager = enforce_eager;
  auto runner = cuda_testing::make_cuda_runner(cpu, options);
  if (runner == nullptr) return {};
  Engine engine(cuda_testing::engine_config(), std::move(runner));
  std::vector<std::unique_ptr<testing::LogprobsCollector>> collectors;
  for (const EngineRequest& r : requests) {
    collectors.push_back(std::make_unique<testing::LogprobsCollector>());
    EXPECT_TRUE(engine.submit(r, collectors.back()->sink()).is_ok());
  }
  engine.start();
  std::vector<Generated> out;
  for (const auto& c : collectors) {
    EXPECT_TRUE(c->wait(120));
    out.push_back({c->tokens(), c->logprobs(), c->misaligned()});
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
  return tiny_requests({sampling(0.0f, 0, 1.0f, 0, 5), sampling(1.0f, 40, 1.0f, 7, 3), sampling(0.8f, 0, 0.9f, 8, 0),
                        sampling(0.0f, 0, 1.0f, 0, -1)});
}

class CudaLogprobsTest : public ::testing::TestWithParam<std::tuple<bool, bool>> {};

TEST_P(CudaLogprobsTest, FollowTheCpuModelForGreedyAndSampledRows) {
  SKIP_WITHOUT_GPU();
  const auto [sample_on_gpu, enforce_eager] = GetParam();
  auto cpu = load_tiny_model(TinyPrecision::kFp16);
  ASSERT_NE(cpu, nullptr);
  const auto reqs = requests();
  const auto got = run(*cpu, sample_on_gpu, enforce_eager, reqs);
  ASSERT_EQ(got.size(), reqs.size());
  const size_t vocab = static_cast<size_t>(cpu->vocab_size());
  for (size_t i = 0; i < reqs.size(); ++i) {
    SCOPED_TRACE("request " + std::to_string(i));
    const EngineRequest& r = reqs[i];
    ASSERT_EQ(got[i].tokens.size(), static_cast<size_t>(kOutputTokens));
    EXPECT_FALSE(got[i].misaligned);
    if (!r.sampling.wants_logprobs()) {
      EXPECT_TRUE(got[i].logprobs.empty());
      continue;
    }
    ASSERT_EQ(got[i].logprobs.size(), got[i].tokens.size());
    std::vector<int32_t> sequence = r.prompt_token_ids;
    sequence.insert(sequence.end(), got[i].tokens.begin(), got[i].tokens.end());
    const std::vector<float> logits = cpu_logits(*cpu, sequence);
    for (size_t t = 0; t < got[i].tokens.size(); ++t) {
      const float* row = logits.data() + (r.prompt_token_ids.size() - 1 + t) * vocab;
      double scale = 0.0;
      for (size_t v = 0; v < vocab; ++v) scale = std::max(scale, std::fabs(static_cast<double>(row[v])));
      const double tol = 2 * kLogitTolerance * scale;
      const TokenLogprobs want = compute_token_logprobs({row, vocab}, got[i].tokens[t], r.sampling.num_logprobs);
      const TokenLogprobs& lp = got[i].logprobs[t];
      EXPECT_EQ(lp.chosen.token_id, got[i].tokens[t]);
      EXPECT_NEAR(lp.chosen.logprob, want.chosen.logprob, tol) << "token " << t;
      ASSERT_EQ(lp.top.size(), want.top.size());
      // Rank by rank: near-ties may swap ids between fp16 and f32, never the sorted values.
      for (size_t k = 0; k < lp.top.size(); ++k)
        EXPECT_NEAR(lp.top[k].logprob, want.top[k].logprob, tol) << "token " << t << " rank " << k;
      if (r.sampling.is_greedy()) {
        ASSERT_FALSE(lp.top.empty());
        EXPECT_EQ(lp.top[0].token_id, lp.chosen.token_id) << "token " << t;
        EXPECT_EQ(lp.top[0].logprob, lp.chosen.logprob) << "token " << t;
      }
    }
  }
}

TEST_P(CudaLogprobsTest, AskingForThemChangesNoToken) {
  SKIP_WITHOUT_GPU();
  const auto [sample_on_gpu, enforce_eager] = GetParam();
  auto cpu = load_tiny_model(TinyPrecision::kFp16);
  ASSERT_NE(cpu, nullptr);
  const auto with = requests();
  auto without = with;
  for (EngineRequest& r : without) r.sampling.num_logprobs = -1;
  const auto a = run(*cpu, sample_on_gpu, enforce_eager, with);
  const auto b = run(*cpu, sample_on_gpu, enforce_eager, without);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].tokens, b[i].tokens) << "request " << i;
    EXPECT_TRUE(b[i].logprobs.empty()) << "request " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(SamplerAndGraphs, CudaLogprobsTest, ::testing::Combine(::testing::Bool(), ::testing::Bool()),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param) ? "GpuSampler" : "HostSampler") +
                                  (std::get<1>(info.param) ? "Eager" : "Graphs");
                         });

}  // namespace
}  // namespace crosspoint
