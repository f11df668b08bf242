// Sampling on the CUDA runner (kernels/cuda/sampling.h through CudaModelRunner and the real
// engine) on the tiny fp16 checkpoint. What can be checked across runs and precisions:
//   - a fixed seed gives the same tokens twice, with graphs and eagerly alike;
//   - top_k = 1 and a tiny temperature both equal the greedy tokens of the same runner;
//   - greedy requests batched beside sampled ones keep their greedy tokens.
// (Checking each sampled token against the CPU model's top-k would be too strict: fp16 and f32
// logits may order near-equal tokens differently.) Every test skips without a GPU.
#include <gtest/gtest.h>

#include <vector>

#include "model_cuda/cuda_test_util.h"

namespace crosspoint {
namespace {

using cuda_testing::kOutputTokens;
using cuda_testing::load_tiny_model;
using cuda_testing::sampling;
using cuda_testing::tiny_requests;
using cuda_testing::TinyPrecision;

// Runs the requests through an engine on a fresh runner that samples on the GPU; each
// request's tokens.
std::vector<std::vector<int32_t>> run(const Model& cpu, bool enforce_eager,
                                      const std::vector<EngineRequest>& requests) {
  cuda::CudaRunnerOptions options;
  options.enforce_eager = enforce_eager;
  options.sample_on_gpu = true;  // these tests are about the GPU sampler
  return cuda_testing::run_engine(cuda_testing::make_cuda_runner(cpu, options), requests);
}

TEST(CudaSamplingTest, AFixedSeedGivesTheSameTokensTwiceWithGraphsAndEagerly) {
  SKIP_WITHOUT_GPU();
  auto cpu = load_tiny_model(TinyPrecision::kFp16);
  ASSERT_NE(cpu, nullptr);
  const auto requests = tiny_requests({sampling(1.0f, 0, 1.0f, 1), sampling(0.8f, 40, 1.0f, 2),
                                       sampling(1.2f, 0, 0.9f, 3), sampling(0.7f, 20, 0.8f, 4)});
  const auto first = run(*cpu, false, requests);
  const auto second = run(*cpu, false, requests);
  const auto eager = run(*cpu, true, requests);
  ASSERT_EQ(first.size(), requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    EXPECT_EQ(first[i].size(), static_cast<size_t>(kOutputTokens)) << "request " << i;
    EXPECT_EQ(first[i], second[i]) << "request " << i << ": same seed, different tokens";
    EXPECT_EQ(first[i], eager[i]) << "request " << i << ": graphs and eager differ";
  }
  // Another seed draws another sequence (16 tokens from a random model: equal only by accident).
  auto reseeded = requests;
  for (auto& r : reseeded) r.sampling.seed += 1000;
  const auto other = run(*cpu, false, reseeded);
  int same = 0;
  for (size_t i = 0; i < requests.size(); ++i) same += other[i] == first[i];
  EXPECT_LT(same, 2) << "changing the seed changed almost nothing";
}

TEST(CudaSamplingTest, TopKOneAndATinyTemperatureEqualGreedy) {
  SKIP_WITHOUT_GPU();
  auto cpu = load_tiny_model(TinyPrecision::kFp16);
  ASSERT_NE(cpu, nullptr);
  const RequestSamplingParams greedy = sampling(0.0f, 0, 1.0f, 0);
  const auto greedy_out = run(*cpu, false, tiny_requests({greedy, greedy, greedy, greedy}));
  const auto top_k_one = run(*cpu, false,
                             tiny_requests({sampling(1.0f, 1, 1.0f, 5), sampling(1.5f, 1, 0.9f, 6),
                                            sampling(0.3f, 1, 1.0f, 7), sampling(1.0f, 1, 1e-6f, 8)}));
  // 1e-6: a logit 0.01 below the max weighs exp(-1e4) = 0 in the fixed-point rule.
  const auto tiny_t = run(*cpu, false,
                          tiny_requests({sampling(1e-6f, 0, 1.0f, 9), sampling(1e-6f, 50, 1.0f, 10),
                                         sampling(1e-6f, 0, 0.9f, 11), sampling(1e-6f, 0, 1.0f, 12)}));
  const auto top_p_tiny = run(*cpu, true,
                              tiny_requests({sampling(1.0f, 0, 1e-6f, 13), sampling(2.0f, 0, 1e-6f, 14),
                                             sampling(0.5f, 7, 1e-6f, 15), sampling(1.0f, 0, 1e-6f, 16)}));
  ASSERT_EQ(greedy_out.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(greedy_out[i].size(), static_cast<size_t>(kOutputTokens));
    EXPECT_EQ(top_k_one[i], greedy_out[i]) << "top_k = 1, request " << i;
    EXPECT_EQ(tiny_t[i], greedy_out[i]) << "temperature 1e-6, request " << i;
    EXPECT_EQ(top_p_tiny[i], greedy_out[i]) << "top_p 1e-6, request " << i;
  }
}

TEST(CudaSamplingTest, GreedyRowsBesideSampledRowsStayGreedy) {
  SKIP_WITHOUT_GPU();
  auto cpu = load_tiny_model(TinyPrecision::kFp16);
  ASSERT_NE(cpu, nullptr);
  const RequestSamplingParams greedy = sampling(0.0f, 0, 1.0f, 0);
  const auto all_greedy = run(*cpu, false, tiny_requests({greedy, greedy, greedy, greedy}));
  const auto mixed =
      run(*cpu, false, tiny_requests({greedy, sampling(1.0f, 0, 1.0f, 21), greedy, sampling(0.9f, 30, 0.95f, 22)}));
  ASSERT_EQ(mixed.size(), 4u);
  EXPECT_EQ(mixed[0], all_greedy[0]);
  EXPECT_EQ(mixed[2], all_greedy[2]);
  EXPECT_EQ(mixed[1].size(), static_cast<size_t>(kOutputTokens));
  EXPECT_EQ(mixed[3].size(), static_cast<size_t>(kOutputTokens));
}

}  // namespace
}  // namespace crosspoint
