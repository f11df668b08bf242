// `eval --device cuda` against the CPU in the GPU's dtype flow: the perplexity of the same
// samples through CudaSequenceForward (one prefill per sample, every position's logits) and
// through forward_sequences on the CPU with fp16 activations, within 0.1 % (the bar),
// and greedy agreement with the CPU's own logits. Skips without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "model_cuda/cuda_test_util.h"
#include "quant/cuda/cuda_sequence_forward.h"
#include "quant/eval_metrics.h"
#include "quant/sequence_forward.h"

namespace crosspoint {
namespace {

using cuda_testing::load_tiny_model;
using cuda_testing::TinyPrecision;

TEST(CudaEvalTest, PerplexityEqualsTheCpusInTheGpuDtypeFlow) {
  SKIP_WITHOUT_GPU();
  for (TinyPrecision precision : {TinyPrecision::kFp16, TinyPrecision::kW4A16Rtn}) {
    auto cpu = load_tiny_model(precision, /*fp16_activations=*/true);
    ASSERT_NE(cpu, nullptr);
    constexpr int32_t kMaxTokens = 80;
    auto gpu = CudaSequenceForward::create(*cpu, kMaxTokens, /*kv_fp8=*/false);
    ASSERT_TRUE(gpu.is_ok()) << gpu.status().to_string();
    const SequenceLogits on_gpu = [&](const std::vector<int32_t>& t, std::vector<float>& out) {
      return (*gpu)->logits(t, out);
    };
    const SequenceLogits on_cpu = [&](const std::vector<int32_t>& t, std::vector<float>& out) {
      return forward_sequences(*cpu, {t}, /*all_positions=*/true, out);
    };
    EvalTotals gpu_totals, cpu_totals;
    for (int s = 0; s < 4; ++s) {
      std::vector<int32_t> tokens;
      for (int32_t i = 0; i < 20 + 19 * s; ++i) tokens.push_back((i * (31 + 2 * s) + 7 * s + 1) % cpu->vocab_size());
      // The GPU against the CPU as reference: agreement and KL of the two devices.
      ASSERT_TRUE(evaluate_sequence(on_gpu, &on_cpu, cpu->vocab_size(), tokens, gpu_totals).is_ok());
      ASSERT_TRUE(evaluate_sequence(on_cpu, nullptr, cpu->vocab_size(), tokens, cpu_totals).is_ok());
    }
    const double relative = std::fabs(gpu_totals.perplexity() / cpu_totals.perplexity() - 1.0);
    std::printf("[ eval     ] %s: perplexity gpu %.5f cpu %.5f (%.4f %%), greedy agreement %.2f %%, mean KL %.2e\n",
                cuda_testing::precision_name(precision), gpu_totals.perplexity(), cpu_totals.perplexity(),
                100.0 * relative, 100.0 * gpu_totals.agreement(), gpu_totals.mean_kl_divergence());
    EXPECT_LT(relative, 1e-3) << cuda_testing::precision_name(precision);
    EXPECT_GT(gpu_totals.agreement(), 0.95) << cuda_testing::precision_name(precision);
  }
}

TEST(CudaEvalTest, ASequenceLongerThanTheSetUpIsRefused) {
  SKIP_WITHOUT_GPU();
  auto cpu = load_tiny_model(TinyPrecision::kFp16);
  ASSERT_NE(cpu, nullptr);
  auto gpu = CudaSequenceForward::create(*cpu, 16, false);
  ASSERT_TRUE(gpu.is_ok()) << gpu.status().to_string();
  std::vector<float> out;
  EXPECT_EQ((*gpu)->logits(std::vector<int32_t>(17, 5), out).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace crosspoint
