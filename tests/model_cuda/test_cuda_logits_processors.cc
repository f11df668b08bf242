// Logit bias, penalties and min-p on the CUDA runner (through the real engine, tiny fp16
// checkpoint). Such rows are drawn by the CPU runner's sampler from the row's fp16 logits copied
// to the host, greedy or not, whichever way the runner samples other rows. Checked:
//   - a +100 bias makes its token win every greedy and sampled step;
//   - min_p = 1 keeps only the most likely token: a sampled request gives the greedy tokens;
//   - a frequency penalty of -2 (repeats favoured) changes the greedy tokens;
//   - those rows give the same tokens with sample_on_gpu on and off, with graphs and eagerly
//     (the GPU sampler draws other tokens than the host's for a seed, so a row wrongly drawn on
//     the GPU would differ).
// Every test skips without a GPU.
#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "model_cuda/cuda_test_util.h"

namespace crosspoint {
namespace {

using cuda_testing::kOutputTokens;
using cuda_testing::load_tiny_model;
using cuda_testing::sampling;
using cuda_testing::tiny_requests;
using cuda_testing::TinyPrecision;

std::vector<std::vector<int32_t>> run(const Model& cpu, bool sample_on_gpu, bool enforce_eager,
                                      const std::vector<EngineRequest>& requests) {
  cuda::CudaRunnerOptions options;
  options.enforce_eager = enforce_eager;
  options.sample_on_gpu = sample_on_gpu;
  return cuda_testing::run_engine(cuda_testing::make_cuda_runner(cpu, options), requests);
}

RequestSamplingParams with_bias(RequestSamplingParams p, int32_t token, float bias) {
  p.logit_bias = {{token, bias}};
  return p;
}

RequestSamplingParams with_min_p(RequestSamplingParams p, float min_p) {
  p.min_p = min_p;
  return p;
}

RequestSamplingParams with_penalties(RequestSamplingParams p, float repetition, float frequency, float presence) {
  p.repetition_penalty = repetition;
  p.frequency_penalty = frequency;
  p.presence_penalty = presence;
  return p;
}

TEST(CudaLogitsProcessorsTest, BiasMinPAndPenaltiesAreApplied) {
  SKIP_WITHOUT_GPU();
  auto cpu = load_tiny_model(TinyPrecision::kFp16);
  ASSERT_NE(cpu, nullptr);
  const RequestSamplingParams greedy = sampling(0.0f, 0, 1.0f, 0);
  const auto requests = tiny_requests({with_bias(greedy, 77, 100.0f), with_bias(sampling(1.0f, 0, 1.0f, 5), 78, 100.0f),
                                       greedy, with_penalties(greedy, 1.0f, -2.0f, 0.0f)});
  auto min_p_requests = requests;
  min_p_requests[2].sampling = with_min_p(sampling(1.0f, 0, 1.0f, 9), 1.0f);
  for (bool sample_on_gpu : {false, true}) {
    SCOPED_TRACE(sample_on_gpu ? "sample_on_gpu" : "sampled on the host");
    const auto got = run(*cpu, sample_on_gpu, false, requests);
    const auto got_min_p = run(*cpu, sample_on_gpu, false, min_p_requests);
    ASSERT_EQ(got.size(), requests.size());
    EXPECT_EQ(got[0], std::vector<int32_t>(kOutputTokens, 77));
    EXPECT_EQ(got[1], std::vector<int32_t>(kOutputTokens, 78));
    EXPECT_EQ(got_min_p[2], got[2]) << "min_p 1 did not sample greedily";
    // Favouring repeats: fewer distinct tokens than the plain greedy request of the same prompt.
    const auto plain = run(*cpu, sample_on_gpu, false, tiny_requests({greedy, greedy, greedy, greedy}));
    EXPECT_LT(std::set<int32_t>(got[3].begin(), got[3].end()).size(),
              std::set<int32_t>(plain[3].begin(), plain[3].end()).size());
  }
}

TEST(CudaLogitsProcessorsTest, RowsAreDrawnByTheHostSamplerWithEitherOption) {
  SKIP_WITHOUT_GPU();
  auto cpu = load_tiny_model(TinyPrecision::kFp16);
  ASSERT_NE(cpu, nullptr);
  const auto requests = tiny_requests({with_penalties(sampling(1.0f, 0, 1.0f, 11), 1.3f, 0.5f, 0.2f),
                                       with_min_p(sampling(0.9f, 40, 0.95f, 12), 0.05f),
                                       with_bias(sampling(1.1f, 0, 1.0f, 13), 5, -100.0f),
                                       with_penalties(sampling(0.0f, 0, 1.0f, 0), 1.5f, 0.0f, 1.0f)});
  const auto host = run(*cpu, false, false, requests);
  const auto gpu_option = run(*cpu, true, false, requests);
  const auto eager = run(*cpu, true, true, requests);
  ASSERT_EQ(host.size(), requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    EXPECT_EQ(host[i].size(), static_cast<size_t>(kOutputTokens)) << "request " << i;
    EXPECT_EQ(gpu_option[i], host[i]) << "request " << i << " was not drawn by the host sampler";
    EXPECT_EQ(eager[i], host[i]) << "request " << i << ": graphs and eager differ";
  }
  for (int32_t token : host[2]) EXPECT_NE(token, 5) << "a -100 bias was drawn";
}

}  // namespace
}  // namespace crosspoint
