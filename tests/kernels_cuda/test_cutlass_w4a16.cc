// cutlass_w4a16_gemm (CUTLASS's Hopper mixed-input GEMM, operands swapped): the reordered
// layout made from w4a16_repack's on the host (every nibble where CUTLASS's layout says, K
// slices addressable as a batch), plans and refusals, and on an H200 every tile and K split
// against the double-precision GPTQ reference, act-order included.
#include <gtest/gtest.h>

#include <random>

#include "kernels/cuda/cutlass_w4a16_gemm.h"
#include "kernels/cuda/cutlass_w4a16_kernels.h"
#include "kernels_cuda/w4a16_test_util.h"

namespace crosspoint::cuda {
namespace {

using testing::DeviceBuffer;

Result<CutlassW4A16Weight> pack_for_cutlass(const testing::GptqLinear& lin, bool act_order,
                                            std::vector<int32_t>* k_perm = nullptr) {
  auto packed = w4a16_repack(lin.qweight.data(), lin.scales.data(), act_order ? lin.g_idx.data() : nullptr, lin.k,
                             lin.n, lin.group_size, "test");
  if (!packed.is_ok()) return packed.status();
  if (k_perm != nullptr) *k_perm = packed->k_perm;
  return cutlass_w4a16_pack(*packed);
}

TEST(CutlassW4A16Pack, EveryNibbleWhereTheLayoutSays) {
  std::mt19937 rng(21);
  for (bool act_order : {false, true}) {
    const auto lin = testing::make_gptq(rng, 256, 192, 64, act_order);
    std::vector<int32_t> k_perm;
    auto w = pack_for_cutlass(lin, act_order, &k_perm);
    if (w.status().code() == StatusCode::kUnsupported) GTEST_SKIP() << w.status().to_string();
    ASSERT_TRUE(w.is_ok()) << w.status().to_string();
    ASSERT_EQ(w->weight.size(), static_cast<size_t>(lin.k) * lin.n / 2);
    for (int n = 0; n < lin.n; ++n) {
      for (int k = 0; k < lin.k; ++k) {
        const int row = k_perm.empty() ? k : k_perm[k];  // packed row k is checkpoint row k_perm[k]
        auto q = cutlass_w4a16_weight_at(*w, n, k);
        ASSERT_TRUE(q.is_ok());
        ASSERT_EQ(*q, static_cast<int>(lin.q[static_cast<size_t>(row) * lin.n + n]) - 8)
            << "n=" << n << " k=" << k << " act_order " << act_order;
      }
    }
    for (int g = 0; g < lin.num_groups; ++g)
      for (int n = 0; n < lin.n; ++n)
        ASSERT_EQ(w->scales[static_cast<size_t>(g) * lin.n + n], lin.scales[static_cast<size_t>(g) * lin.n + n]);
  }
}

// A K split runs the slices as a batch of GEMMs over the same bytes: slice l's (n, k) must be
// the whole weight's (n, k + l * k_slice).
TEST(CutlassW4A16Pack, KSlicesAreBatchesOfTheSameLayout) {
  const int n = 192, k = 1024;
  if (cutlass_w4a16::reordered_offset(0, 0, 0, n, k, 1) < 0) GTEST_SKIP() << "no sm_90a kernels in this build";
  for (int slices : {2, 4, 8}) {
    const int k_slice = k / slices;
    for (int l = 0; l < slices; ++l)
      for (int nn = 0; nn < n; nn += 7)
        for (int kk = 0; kk < k_slice; kk += 3)
          ASSERT_EQ(cutlass_w4a16::reordered_offset(nn, kk, l, n, k_slice, slices),
                    cutlass_w4a16::reordered_offset(nn, kk + l * k_slice, 0, n, k, 1))
              << "slices " << slices << " l " << l << " n " << nn << " k " << kk;
  }
}

TEST(CutlassW4A16Plan, TileByRowsAndSplitsOfWholeGroups) {
  EXPECT_EQ(cutlass_w4a16_plan(16, 3584, 3584, 128, 132).tile, CutlassW4A16Tile::k64x16);
  EXPECT_EQ(cutlass_w4a16_plan(33, 3584, 3584, 128, 132).tile, CutlassW4A16Tile::k64x64);
  EXPECT_EQ(cutlass_w4a16_plan(2048, 3584, 3584, 128, 132).tile, CutlassW4A16Tile::k128x128);
  EXPECT_EQ(cutlass_w4a16_plan(16, 3584, 3584, 128, 132).k_splits, 2);   // o_proj: 56 tiles
  EXPECT_EQ(cutlass_w4a16_plan(16, 37888, 3584, 128, 132).k_splits, 1);  // gate_up fills the SMs
  EXPECT_EQ(cutlass_w4a16_plan(8, 64, 3584, 128, 132, 8).k_splits, 1);   // 448 rows are not whole groups of 128
  EXPECT_EQ(cutlass_w4a16_plan(8, 64, 3584, 64, 132, 8).k_splits, 8);    // but whole groups of 64
}

TEST(CutlassW4A16Gemm, RefusesBadArgumentsNamingThem) {
  const CutlassW4A16Plan plain;
  EXPECT_EQ(cutlass_w4a16_gemm(nullptr, 64, nullptr, nullptr, nullptr, 64, 4, 48, 64, 64, plain, nullptr, 0, nullptr)
                .code(),
            StatusCode::kInvalidArgument);  // N not a multiple of 64
  EXPECT_EQ(cutlass_w4a16_gemm(nullptr, 256, nullptr, nullptr, nullptr, 64, 4, 64, 256, 96, plain, nullptr, 0, nullptr)
                .code(),
            StatusCode::kUnsupported);  // group 96
  const CutlassW4A16Plan split{CutlassW4A16Tile::k64x16, 2};
  EXPECT_EQ(cutlass_w4a16_gemm(nullptr, 256, nullptr, nullptr, nullptr, 64, 4, 64, 256, 64, split, nullptr, 0, nullptr)
                .code(),
            StatusCode::kInvalidArgument);  // no workspace
}

TEST(CutlassW4A16Gemm, MatchesReferenceOnEveryTileAndSplit) {
  CROSSPOINT_SKIP_WITHOUT_GPU();
  if (!cutlass_w4a16_available()) GTEST_SKIP() << "needs compute capability 9.0 and an sm_90a build";
  std::mt19937 rng(22);
  struct Shape {
    int n, k, group;
    bool act_order;
  };
  for (const Shape& shape : {Shape{128, 1024, 128, false}, Shape{192, 768, 64, true}, Shape{256, 512, -1, false},
                             Shape{64, 2048, 128, true}}) {
    const auto lin = testing::make_gptq(rng, shape.k, shape.n, shape.group, shape.act_order);
    std::vector<int32_t> k_perm;
    auto w = pack_for_cutlass(lin, shape.act_order, &k_perm);
    ASSERT_TRUE(w.is_ok()) << w.status().to_string();
    DeviceBuffer<uint8_t> weight(w->weight);
    DeviceBuffer<uint16_t> scales(w->scales);
    for (int m : {1, 7, 16, 17, 40, 64, 65, 130}) {
      const int64_t x_stride = shape.k + 8, y_stride = shape.n + 8;
      const auto x = testing::random_f16(rng, static_cast<size_t>(m) * x_stride, -1.f, 1.f);
      const auto ref = testing::w4a16_reference(lin, x, m, x_stride);
      std::vector<uint16_t> x_perm = x;  // the engine permutes the activations' columns for act-order
      for (int i = 0; i < m && !k_perm.empty(); ++i)
        for (int kk = 0; kk < shape.k; ++kk) x_perm[i * x_stride + kk] = x[i * x_stride + k_perm[kk]];
      DeviceBuffer<uint16_t> x_dev(x_perm), y(static_cast<size_t>(m) * y_stride);
      DeviceBuffer<float> workspace(static_cast<size_t>(4) * m * shape.n);
      for (int splits : {1, 2, 4}) {
        const CutlassW4A16Plan plan = cutlass_w4a16_plan(m, shape.n, shape.k, lin.group_size, 132, splits);
        y.poison();
        const Status st = cutlass_w4a16_gemm(x_dev.get(), x_stride, weight.get(), scales.get(), y.get(), y_stride, m,
                                             shape.n, shape.k, lin.group_size, plan, workspace.get(),
                                             static_cast<size_t>(4) * m * shape.n * 4, nullptr);
        ASSERT_TRUE(st.is_ok()) << st.to_string();
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
        const std::vector<uint16_t> got = y.download();
        std::vector<uint16_t> packed(static_cast<size_t>(m) * shape.n);
        for (int i = 0; i < m; ++i) {
          for (int j = 0; j < shape.n; ++j) packed[static_cast<size_t>(i) * shape.n + j] = got[i * y_stride + j];
          for (int j = shape.n; j < y_stride; ++j) ASSERT_EQ(got[i * y_stride + j], 0xFFFF) << "padding written";
        }
        EXPECT_LT(testing::relative_error_f16(packed, ref), 3e-3)
            << "m=" << m << " n=" << shape.n << " k=" << shape.k << " group " << shape.group << " act_order "
            << shape.act_order << " tile " << cutlass_w4a16_tile_name(plan.tile) << " k_splits " << plan.k_splits;
      }
    }
  }
}

// CUTLASS's own can_implement on the host for every plan the engine and the tests make.
TEST(CutlassW4A16Gemm, CutlassTakesEveryPlannedShape) {
  if (!cutlass_w4a16_gemm_check(16, 64, 512, 128, 512, 64, {}).is_ok() && !cutlass_w4a16_available()) {
    GTEST_SKIP() << "no sm_90a kernels in this build";
  }
  for (int m : {1, 4, 16, 17, 33, 64, 65, 130, 256, 2048}) {
    for (auto [n, k, g] : {std::tuple{4608, 3584, 128}, {3584, 3584, 128}, {37888, 3584, 128}, {3584, 18944, 128},
                           {192, 768, 64}, {256, 512, -1}}) {
      for (int splits : {0, 1, 2, 4}) {
        const CutlassW4A16Plan plan = cutlass_w4a16_plan(m, n, k, g, 132, splits);
        const Status st = cutlass_w4a16_gemm_check(m, n, k, g, k + 8, n + 8, plan);
        EXPECT_TRUE(st.is_ok()) << "m=" << m << " n=" << n << " k=" << k << " tile "
                                << cutlass_w4a16_tile_name(plan.tile) << " k_splits " << plan.k_splits << ": "
                                << st.to_string();
      }
    }
  }
}

}  // namespace
}  // namespace crosspoint::cuda
