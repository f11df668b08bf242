// W4A16's group parameters beyond the symmetric groups of 64+ rows: zero points (asymmetric
// GPTQ, AWQ, compressed-tensors asymmetric) and groups of 32 rows (two a 64-row chunk). The
// packed zero layout (host), and every kernel (GEMV, mma.sync, wgmma at both block widths, the
// dequantise path) against the dequantise-then-matmul reference w = s * (q - z) with zero
// points 0..16 or 8, groups of 32 to all of K, with and without act-order; the dequantised
// weight bit for bit against the formula.
#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <tuple>
#include <vector>

#include "common/dtype.h"
#include "kernels/cuda/w4a16_dequantize.h"
#include "kernels/cuda/w4a16_gemm.h"
#include "kernels/cuda/w4a16_gemv.h"
#include "kernels_cuda/reference.h"
#include "kernels_cuda/w4a16_test_util.h"

namespace crosspoint::cuda {
namespace {

using testing::DeviceBuffer;
using testing::GptqLinear;
using testing::make_gptq;

TEST(W4A16PackZeros, AllEightIsSymmetricAndOthersAreOneThousandTwentyFourPlusZ) {
  std::vector<uint8_t> zeros(2 * 32, 8);
  auto packed = w4a16_pack_zeros(zeros.data(), 2, 32, "t");
  ASSERT_TRUE(packed.is_ok());
  EXPECT_TRUE(packed->empty());  // the symmetric kernels run
  zeros[0] = 0;                  // group 0, column 0
  zeros[8] = 16;                 // group 0, column 8: the high half of the same word
  zeros[32 + 17] = 3;            // group 1, column 17: n16 block 1, c = 1, low half
  packed = w4a16_pack_zeros(zeros.data(), 2, 32, "t");
  ASSERT_TRUE(packed.is_ok());
  ASSERT_EQ(packed->size(), 2u * 2 * 8);
  EXPECT_EQ((*packed)[0], (0x6400u + 0) | (0x6400u + 16) << 16);
  EXPECT_EQ(f16_to_f32(static_cast<uint16_t>((*packed)[0] >> 16)), 1040.0f);
  EXPECT_EQ((*packed)[(1 * 2 + 1) * 8 + 1], (0x6400u + 3) | (0x6400u + 8) << 16);
  zeros[5] = 17;
  EXPECT_EQ(w4a16_pack_zeros(zeros.data(), 2, 32, "t").status().code(), StatusCode::kCorrupt);
}

struct AsymProblem {
  GptqLinear lin;
  std::vector<uint16_t> x;
  std::vector<double> ref;
  std::unique_ptr<DeviceBuffer<uint32_t>> weight, scales, zeros;
  std::unique_ptr<DeviceBuffer<int32_t>> perm;
  std::unique_ptr<DeviceBuffer<uint16_t>> x_dev, x_in;
};

AsymProblem make_problem(std::mt19937& rng, int m, int n, int k, int group_size, bool act_order,
                         bool asymmetric = true) {
  AsymProblem p;
  p.lin = make_gptq(rng, k, n, group_size, act_order, asymmetric);
  p.x = testing::random_f16(rng, static_cast<size_t>(m) * k, -1.f, 1.f);
  const auto xf = testing::f16_to_f32(p.x);
  p.ref = testing::matmul_nt_ref(
      m, n, k, [&](int i, int kk) { return xf[static_cast<size_t>(i) * k + kk]; },
      [&](int j, int kk) { return p.lin.weight(kk, j); });
  auto packed = w4a16_repack(p.lin.qweight.data(), p.lin.scales.data(), p.lin.g_idx.data(), k, n, group_size, "t");
  EXPECT_TRUE(packed.is_ok()) << packed.status().to_string();
  p.weight = std::make_unique<DeviceBuffer<uint32_t>>(packed->weight);
  p.scales = std::make_unique<DeviceBuffer<uint32_t>>(packed->scales);
  if (asymmetric) {
    auto zeros = w4a16_pack_zeros(p.lin.zeros.data(), p.lin.num_groups, n, "t");
    EXPECT_TRUE(zeros.is_ok() && !zeros->empty());
    p.zeros = std::make_unique<DeviceBuffer<uint32_t>>(*zeros);
  }
  p.x_dev = std::make_unique<DeviceBuffer<uint16_t>>(p.x);
  p.x_in = std::make_unique<DeviceBuffer<uint16_t>>(p.x.size());
  const uint16_t* src = p.x_dev->get();
  if (!packed->k_perm.empty()) {
    p.perm = std::make_unique<DeviceBuffer<int32_t>>(packed->k_perm);
    EXPECT_TRUE(w4a16_permute_columns(src, p.perm->get(), p.x_in->get(), m, k, nullptr).is_ok());
  } else {
    EXPECT_EQ(cudaMemcpy(p.x_in->get(), src, p.x.size() * 2, cudaMemcpyDeviceToDevice), cudaSuccess);
  }
  return p;
}

// Zero points, and groups of 32 with and without them, on every kernel.
TEST(W4A16GroupParams, EveryKernelMatchesTheReference) {
  CROSSPOINT_SKIP_WITHOUT_GPU();
  std::mt19937 rng(51);
  for (W4A16Kernel kernel : {W4A16Kernel::kGemv, W4A16Kernel::kLargeTile, W4A16Kernel::kWgmma}) {
    if (kernel == W4A16Kernel::kWgmma && !w4a16_wgmma_supported()) continue;
    for (auto [m, n, k, g, act, asym] : {std::tuple{1, 320, 1024, 128, false, true},
                                         {5, 64, 4096, 64, true, true},
                                         {8, 256, 640, -1, false, true},
                                         {16, 3584, 640, 128, false, true},
                                         {70, 192, 2048, 128, true, true},
                                         {130, 512, 1024, 128, false, true},
                                         {1, 320, 1024, 32, false, false},
                                         {3, 64, 640, 32, true, true},
                                         {8, 256, 4096, 32, false, false},
                                         {16, 512, 640, 32, false, true},
                                         {70, 192, 2048, 32, true, false},
                                         {130, 512, 1024, 32, false, true}}) {
      if (kernel == W4A16Kernel::kGemv && m > kW4A16GemvKernelMaxRows) continue;
      if (kernel == W4A16Kernel::kWgmma && n % 64 != 0) continue;
      AsymProblem p = make_problem(rng, m, n, k, g, act, asym);
      DeviceBuffer<uint16_t> y(static_cast<size_t>(m) * n);
      for (int repeat = 0; repeat < 2; ++repeat) {
        y.poison();
        const Status st = w4a16_gemm_with(kernel, p.x_in->get(), k, p.weight->get(), p.scales->get(), y.get(), n, m, n,
                                          k, g, nullptr, p.zeros ? p.zeros->get() : nullptr);
        ASSERT_TRUE(st.is_ok()) << st.to_string();
        EXPECT_LT(testing::relative_error_f16(y.download(), p.ref), 3e-3)
            << "kernel " << static_cast<int>(kernel) << " m=" << m << " n=" << n << " k=" << k << " g=" << g
            << " act_order " << act << " zero points " << asym;
      }
    }
  }
}

TEST(W4A16GroupParams, WideWgmmaBlocksAndTheEngineDispatchMatchTheReference) {
  CROSSPOINT_SKIP_WITHOUT_GPU();
  std::mt19937 rng(52);
  for (auto [m, n, k, g] : {std::tuple{100, 4608, 3584, 128},
                            {256, 512, 18944, 128},
                            {3, 4608, 3584, 128},
                            {100, 4608, 3584, 32},
                            {3, 512, 18944, 32}}) {
    AsymProblem p = make_problem(rng, m, n, k, g, false);
    DeviceBuffer<uint16_t> y(static_cast<size_t>(m) * n);
    y.poison();
    ASSERT_TRUE(
        w4a16_gemm(p.x_in->get(), k, p.weight->get(), p.scales->get(), y.get(), n, m, n, k, g, nullptr, p.zeros->get())
            .is_ok());
    EXPECT_LT(testing::relative_error_f16(y.download(), p.ref), 3e-3)
        << "m=" << m << " n=" << n << " k=" << k << " g=" << g;
    if (!w4a16_wgmma_supported()) continue;
    for (int warp_groups : {2, kW4A16WgmmaWideWarpGroups}) {
      W4A16WgmmaOptions options;
      options.warp_groups = warp_groups;
      y.poison();
      ASSERT_TRUE(w4a16_gemm_wgmma(p.x_in->get(), k, p.weight->get(), p.scales->get(), y.get(), n, m, n, k, g, options,
                                   nullptr, p.zeros->get())
                      .is_ok());
      EXPECT_LT(testing::relative_error_f16(y.download(), p.ref), 3e-3)
          << "warp_groups " << warp_groups << " m=" << m << " n=" << n << " k=" << k << " g=" << g;
    }
  }
}

TEST(W4A16GroupParams, DequantisedWeightsAreTheFormulaBitForBit) {
  CROSSPOINT_SKIP_WITHOUT_GPU();
  std::mt19937 rng(53);
  for (auto [n, k, g, act] : {std::tuple{48, 320, 64, false}, {256, 1024, 128, true}, {64, 640, 32, true}}) {
    const GptqLinear lin = make_gptq(rng, k, n, g, act, /*asymmetric=*/true);
    auto packed = w4a16_repack(lin.qweight.data(), lin.scales.data(), lin.g_idx.data(), k, n, g, "t");
    ASSERT_TRUE(packed.is_ok());
    auto zeros = w4a16_pack_zeros(lin.zeros.data(), lin.num_groups, n, "t");
    ASSERT_TRUE(zeros.is_ok());
    DeviceBuffer<uint32_t> weight(packed->weight), scales(packed->scales), zeros_dev(*zeros);
    DeviceBuffer<uint16_t> w(static_cast<size_t>(n) * k);
    w.poison();
    ASSERT_TRUE(w4a16_dequantize(weight.get(), scales.get(), n, k, g, w.get(), k, nullptr, zeros_dev.get()).is_ok());
    const auto got = w.download();
    int wrong = 0;
    for (int col = 0; col < n; ++col)
      for (int i = 0; i < k; ++i) {
        const int row = packed->k_perm.empty() ? i : packed->k_perm[i];
        // s * (q - z): an fp16 times a small integer, exact in f32 and rounded once, as __hmul2.
        wrong += got[static_cast<size_t>(col) * k + i] != f32_to_f16(static_cast<float>(lin.weight(row, col)));
      }
    EXPECT_EQ(wrong, 0) << "n=" << n << " k=" << k << " g=" << g;
  }
}

}  // namespace
}  // namespace crosspoint::cuda
