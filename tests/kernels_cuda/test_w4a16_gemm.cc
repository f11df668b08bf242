// W4A16: GPTQ repack (host) and the CUDA GEMM against a plain dequantise-then-matmul
// reference on random GPTQ tensors at awkward sizes, with and without act-order.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "common/dtype.h"
#include "kernels/cuda/w4a16_gemm.h"
#include "kernels_cuda/reference.h"
#include "kernels_cuda/w4a16_test_util.h"

namespace crosspoint::cuda {
namespace {

using testing::DeviceBuffer;

using testing::GptqLinear;
using testing::make_gptq;

// Runs repack + (permute) + GEMM on the device `repeats` times (reusing the split-K
// workspace, which each launch must leave zeroed) and returns each y [M, N] fp16.
std::vector<std::vector<uint16_t>> run_w4a16(const GptqLinear& lin, const std::vector<uint16_t>& x, int m, bool pass_g_idx,
                                int repeats = 1) {
  auto packed = w4a16_repack(lin.qweight.data(), lin.scales.data(), pass_g_idx ? lin.g_idx.data() : nullptr, lin.k,
                             lin.n, lin.group_size, "test.qweight");
  EXPECT_TRUE(packed.is_ok()) << packed.status().to_string();
  if (!packed.is_ok()) return {};
  DeviceBuffer<uint32_t> weight(packed->weight), scales(packed->scales);
  DeviceBuffer<uint16_t> x_dev(x), x_perm(x.size()), y(static_cast<size_t>(m) * lin.n);
  DeviceBuffer<uint8_t> workspace(w4a16_workspace_bytes(m, lin.n));
  EXPECT_EQ(cudaMemset(workspace.get(), 0, w4a16_workspace_bytes(m, lin.n)), cudaSuccess);
  const uint16_t* x_in = x_dev.get();
  std::unique_ptr<DeviceBuffer<int32_t>> perm;
  if (!packed->k_perm.empty()) {
    perm = std::make_unique<DeviceBuffer<int32_t>>(packed->k_perm);
    EXPECT_TRUE(w4a16_permute_columns(x_dev.get(), perm->get(), x_perm.get(), m, lin.k, nullptr).is_ok());
    x_in = x_perm.get();
  }
  std::vector<std::vector<uint16_t>> out;
  for (int r = 0; r < repeats; ++r) {
    y.poison();
    const Status st = w4a16_gemm(x_in, lin.k, weight.get(), scales.get(), y.get(), lin.n, m, lin.n, lin.k,
                                 lin.group_size, workspace.get(), nullptr);
    EXPECT_TRUE(st.is_ok()) << st.to_string();
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    out.push_back(y.download());
  }
  return out;
}

void check_w4a16(int m, int n, int k, int group_size, bool act_order, uint32_t seed, int repeats = 1) {
  std::mt19937 rng(seed);
  const GptqLinear lin = make_gptq(rng, k, n, group_size, act_order);
  const auto x = testing::random_f16(rng, static_cast<size_t>(m) * k, -1.f, 1.f);
  const auto ys = run_w4a16(lin, x, m, true, repeats);
  ASSERT_EQ(ys.size(), static_cast<size_t>(repeats));
  const auto xf = testing::f16_to_f32(x);
  const auto ref = testing::matmul_nt_ref(m, n, k, [&](int i, int kk) { return xf[static_cast<size_t>(i) * k + kk]; },
                                          [&](int j, int kk) { return lin.weight(kk, j); });
  // fp16 weights after dequant (one rounding of s*(q-8)) and fp16 output: ~1e-3. Split-K
  // sums meet through fp32 atomics, so repeats may differ in the last bit, never more.
  for (size_t r = 0; r < ys.size(); ++r) {
    ASSERT_EQ(ys[r].size(), static_cast<size_t>(m) * n);
    EXPECT_LT(testing::relative_error_f16(ys[r], ref), 3e-3)
        << "m=" << m << " n=" << n << " k=" << k << " g=" << group_size << " repeat " << r;
  }
}

TEST(W4A16Repack, RefusesShapesTheKernelCannotRun) {
  std::vector<int32_t> qweight(128 * 64 / 8, 0);
  std::vector<uint16_t> scales(64 * 2, 0x3C00);
  EXPECT_EQ(w4a16_repack(qweight.data(), scales.data(), nullptr, 96, 64, 32, "l.qweight").status().code(), StatusCode::kUnsupported);
  EXPECT_EQ(w4a16_repack(qweight.data(), scales.data(), nullptr, 128, 40, 128, "l.qweight").status().code(), StatusCode::kUnsupported);
  EXPECT_EQ(w4a16_repack(qweight.data(), scales.data(), nullptr, 128, 64, 96, "l.qweight").status().code(), StatusCode::kUnsupported);
  const auto bad = w4a16_repack(qweight.data(), scales.data(), nullptr, 128, 40, 128, "layers.0.q_proj");
  EXPECT_NE(bad.status().message().find("layers.0.q_proj"), std::string::npos);
  std::vector<int32_t> g_idx(128, 0);
  g_idx[5] = 7;  // only 1 group exists
  EXPECT_EQ(w4a16_repack(qweight.data(), scales.data(), g_idx.data(), 128, 64, 128, "l").status().code(), StatusCode::kCorrupt);
  std::vector<int32_t> uneven(128, 0);
  for (int i = 0; i < 128; ++i) uneven[i] = i < 100 ? 0 : 1;  // 100 + 28 rows, group size 64
  EXPECT_EQ(w4a16_repack(qweight.data(), scales.data(), uneven.data(), 128, 64, 64, "l").status().code(), StatusCode::kUnsupported);
}

TEST(W4A16Repack, IdentityGIdxNeedsNoPermutation) {
  std::mt19937 rng(1);
  const GptqLinear lin = make_gptq(rng, 256, 32, 128, false);
  auto packed = w4a16_repack(lin.qweight.data(), lin.scales.data(), lin.g_idx.data(), 256, 32, 128, "l");
  ASSERT_TRUE(packed.is_ok());
  EXPECT_TRUE(packed->k_perm.empty());
  EXPECT_EQ(packed->weight.size(), 256u * 32 / 8);
  EXPECT_EQ(packed->scales.size(), 2u * 2 * 8);
}

TEST(W4A16Gemm, RefusesBadShapesBeforeLaunch) {
  EXPECT_EQ(w4a16_gemm(nullptr, 100, nullptr, nullptr, nullptr, 64, 1, 64, 100, 128, nullptr, nullptr).code(), StatusCode::kUnsupported);
  EXPECT_EQ(w4a16_gemm(nullptr, 128, nullptr, nullptr, nullptr, 20, 1, 20, 128, 128, nullptr, nullptr).code(), StatusCode::kUnsupported);
  EXPECT_EQ(w4a16_gemm(nullptr, 128, nullptr, nullptr, nullptr, 64, 1, 64, 128, 128, nullptr, nullptr).code(), StatusCode::kInvalidArgument);
}

TEST(W4A16Gemm, MatchesReferenceAtAwkwardSizes) {
  CROSSPOINT_SKIP_WITHOUT_GPU();
  struct Case { int m, n, k, g; };
  const Case cases[] = {{1, 48, 192, 64},   {3, 272, 320, 128}, {7, 16, 64, -1},    {16, 80, 512, 128},
                        {17, 64, 1024, 128}, {33, 112, 384, 128}, {64, 32, 256, 64}, {65, 400, 640, 128},
                        {130, 96, 384, 128}, {1, 3584, 3584, 128}, {5, 512, 3584, 128}};
  uint32_t seed = 100;
  for (const auto& c : cases) check_w4a16(c.m, c.n, c.k, c.g, false, seed++);
}

TEST(W4A16Gemm, SplitKScratchIsLeftClean) {
  CROSSPOINT_SKIP_WITHOUT_GPU();
  check_w4a16(9, 48, 4096, 128, false, 7, /*repeats=*/3);   // one n tile, many k splits (M > 8: not the GEMV)
  check_w4a16(70, 32, 2048, 128, false, 8, /*repeats=*/3);  // two m chunks
}

TEST(W4A16Gemm, EveryTuningMatchesReference) {
  CROSSPOINT_SKIP_WITHOUT_GPU();
  std::mt19937 rng(31);
  for (W4A16Tuning tuning : {W4A16Tuning::kDefault, W4A16Tuning::kDeepPipeline, W4A16Tuning::kNarrowBlocks,
                             W4A16Tuning::kMoreSplits}) {
    for (auto [m, n, k] : {std::tuple{1, 272, 1024}, {9, 48, 4096}, {16, 3584, 640}}) {
      const GptqLinear lin = make_gptq(rng, k, n, 128, false);
      const auto x = testing::random_f16(rng, static_cast<size_t>(m) * k, -1.f, 1.f);
      auto packed = w4a16_repack(lin.qweight.data(), lin.scales.data(), nullptr, k, n, 128, "t");
      ASSERT_TRUE(packed.is_ok());
      DeviceBuffer<uint32_t> weight(packed->weight), scales(packed->scales);
      DeviceBuffer<uint16_t> x_dev(x), y(static_cast<size_t>(m) * n);
      DeviceBuffer<uint8_t> workspace(w4a16_workspace_bytes(m, n));
      ASSERT_EQ(cudaMemset(workspace.get(), 0, w4a16_workspace_bytes(m, n)), cudaSuccess);
      y.poison();
      const Status st = w4a16_gemm_tuned(tuning, x_dev.get(), k, weight.get(), scales.get(), y.get(), n, m, n, k, 128,
                                         workspace.get(), nullptr);
      ASSERT_TRUE(st.is_ok()) << st.to_string();
      const auto xf = testing::f16_to_f32(x);
      const auto ref = testing::matmul_nt_ref(m, n, k, [&](int i, int kk) { return xf[static_cast<size_t>(i) * k + kk]; },
                                              [&](int j, int kk) { return lin.weight(kk, j); });
      EXPECT_LT(testing::relative_error_f16(y.download(), ref), 3e-3)
          << "tuning " << static_cast<int>(tuning) << " m=" << m << " n=" << n << " k=" << k;
    }
  }
}

TEST(W4A16Gemm, ActOrderMatchesReference) {
  CROSSPOINT_SKIP_WITHOUT_GPU();
  check_w4a16(5, 64, 512, 128, true, 11);
  check_w4a16(40, 144, 768, 128, true, 12);
}

}  // namespace
}  // namespace crosspoint::cuda
