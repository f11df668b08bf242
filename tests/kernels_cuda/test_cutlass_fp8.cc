// cutlass_fp8_gemm (CUTLASS's Hopper warp-specialised FP8 GEMM, operands swapped): its plans
// and refusals on the host, and on an H200 every tile and K split against a double-precision
// matmul of the same e4m3 values, strided outputs with their padding untouched, the same bits
// on every run.
#include <gtest/gtest.h>

#include <random>

#include "kernels/cuda/cutlass_fp8_gemm.h"
#include "kernels_cuda/reference.h"

namespace crosspoint::cuda {
namespace {

using testing::DeviceBuffer;

TEST(CutlassFp8Plan, TileByRowsAndKSplitsThatFillOneWave) {
  EXPECT_EQ(cutlass_fp8_plan(1, 3584, 3584, 132).tile, CutlassFp8Tile::k64x16);
  EXPECT_EQ(cutlass_fp8_plan(16, 3584, 3584, 132).tile, CutlassFp8Tile::k64x16);
  EXPECT_EQ(cutlass_fp8_plan(17, 3584, 3584, 132).tile, CutlassFp8Tile::k64x32);
  EXPECT_EQ(cutlass_fp8_plan(64, 3584, 3584, 132).tile, CutlassFp8Tile::k64x64);
  EXPECT_EQ(cutlass_fp8_plan(65, 3584, 3584, 132).tile, CutlassFp8Tile::k128x128);
  // o_proj at 16 rows: 56 tiles, so two slices (112 CTAs); three would need 168.
  EXPECT_EQ(cutlass_fp8_plan(16, 3584, 3584, 132).k_splits, 2);
  // gate_up: 592 tiles already fill the SMs.
  EXPECT_EQ(cutlass_fp8_plan(16, 37888, 3584, 132).k_splits, 1);
  // down_proj: 56 tiles, K = 18944 = 2 x 9472.
  EXPECT_EQ(cutlass_fp8_plan(64, 3584, 18944, 132).k_splits, 2);
  // The 128x128 tile never splits; a forced split that K cannot take is dropped.
  EXPECT_EQ(cutlass_fp8_plan(100, 512, 3584, 132).k_splits, 1);
  EXPECT_EQ(cutlass_fp8_plan(8, 64, 48, 132, 2).k_splits, 1);
  EXPECT_EQ(cutlass_fp8_plan(8, 64, 3584, 132, 4).k_splits, 4);  // 896-byte slices: the last k-block of each is partial
  EXPECT_EQ(cutlass_fp8_plan(8, 64, 3584, 132, 8).k_splits, 1);  // 448 bytes: under two k-blocks
}

TEST(CutlassFp8Gemm, RefusesBadArgumentsNamingThem) {
  const CutlassFp8Plan plain;
  EXPECT_EQ(cutlass_fp8_gemm(nullptr, 40, nullptr, nullptr, 40, nullptr, nullptr, 64, 4, 64, 40, plain, nullptr, 0,
                             nullptr)
                .code(),
            StatusCode::kInvalidArgument);  // K not a multiple of 16 bytes
  const CutlassFp8Plan split{CutlassFp8Tile::k64x16, 2};
  const Status no_workspace = cutlass_fp8_gemm(nullptr, 1024, nullptr, nullptr, 1024, nullptr, nullptr, 64, 4, 64,
                                               1024, split, nullptr, 0, nullptr);
  EXPECT_EQ(no_workspace.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(no_workspace.message().find("workspace"), std::string::npos) << no_workspace.to_string();
  const CutlassFp8Plan big_split{CutlassFp8Tile::k128x128, 2};
  EXPECT_EQ(cutlass_fp8_gemm(nullptr, 1024, nullptr, nullptr, 1024, nullptr, nullptr, 64, 4, 64, 1024, big_split,
                             nullptr, 1 << 20, nullptr)
                .code(),
            StatusCode::kInvalidArgument);
}

struct Problem {
  std::vector<uint8_t> xq, wq;
  std::vector<float> x_scale, w_scale;
  std::vector<double> ref;  // [M, N]
};

Problem make_problem(std::mt19937& rng, int m, int n, int k) {
  Problem p{testing::random_e4m3(rng, static_cast<size_t>(m) * k), testing::random_e4m3(rng, static_cast<size_t>(n) * k),
            {}, {}, {}};
  std::uniform_real_distribution<float> scale(1e-4f, 1e-3f);
  p.x_scale.resize(m);
  p.w_scale.resize(n);
  for (auto& s : p.x_scale) s = scale(rng);
  for (auto& s : p.w_scale) s = scale(rng);
  p.ref = testing::matmul_nt_ref(
      m, n, k, [&](int i, int kk) { return testing::e4m3_to_f32(p.xq[static_cast<size_t>(i) * k + kk]); },
      [&](int j, int kk) { return testing::e4m3_to_f32(p.wq[static_cast<size_t>(j) * k + kk]); });
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) p.ref[static_cast<size_t>(i) * n + j] *= static_cast<double>(p.x_scale[i]) * p.w_scale[j];
  return p;
}

// Rows across every tile's boundary, channel counts that leave partial tiles, K that splits
// two and four ways and K that does not; y written with a row stride wider than N.
TEST(CutlassFp8Gemm, MatchesReferenceOnEveryTileAndSplit) {
  CROSSPOINT_SKIP_WITHOUT_GPU();
  if (!cutlass_fp8_available()) GTEST_SKIP() << "needs compute capability 9.0 and an sm_90a build";
  std::mt19937 rng(11);
  for (int m : {1, 5, 16, 17, 32, 33, 64, 65, 130, 256}) {
    for (auto [n, k] : {std::pair{72, 2560}, {200, 1024}, {136, 4096}, {64, 528}}) {
      const Problem p = make_problem(rng, m, n, k);
      const int64_t y_stride = n + 8;
      DeviceBuffer<uint8_t> xq(p.xq), wq(p.wq);
      DeviceBuffer<float> xs(p.x_scale), ws(p.w_scale), workspace(static_cast<size_t>(4) * m * n);
      DeviceBuffer<uint16_t> y(static_cast<size_t>(m) * y_stride);
      for (int splits : {1, 2, 4}) {
        const CutlassFp8Plan plan = cutlass_fp8_plan(m, n, k, 132, splits);
        y.poison();
        const Status st = cutlass_fp8_gemm(xq.get(), k, xs.get(), wq.get(), k, ws.get(), y.get(), y_stride, m, n, k,
                                           plan, workspace.get(), static_cast<size_t>(4) * m * n * 4, nullptr);
        ASSERT_TRUE(st.is_ok()) << st.to_string();
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
        const std::vector<uint16_t> got = y.download();
        std::vector<uint16_t> packed(static_cast<size_t>(m) * n);
        for (int i = 0; i < m; ++i) {
          for (int j = 0; j < n; ++j) packed[static_cast<size_t>(i) * n + j] = got[i * y_stride + j];
          for (int j = n; j < y_stride; ++j) ASSERT_EQ(got[i * y_stride + j], 0xFFFF) << "padding written, row " << i;
        }
        EXPECT_LT(testing::relative_error_f16(packed, p.ref), 2e-3)
            << "m=" << m << " n=" << n << " k=" << k << " tile " << cutlass_fp8_tile_name(plan.tile) << " k_splits "
            << plan.k_splits;
        // The same bits again.
        ASSERT_TRUE(cutlass_fp8_gemm(xq.get(), k, xs.get(), wq.get(), k, ws.get(), y.get(), y_stride, m, n, k, plan,
                                     workspace.get(), static_cast<size_t>(4) * m * n * 4, nullptr)
                        .is_ok());
        EXPECT_EQ(y.download(), got) << "m=" << m << " n=" << n << " k=" << k << " k_splits " << plan.k_splits;
      }
    }
  }
}

// CUTLASS's own can_implement on the host, for every plan the engine and the tests make: a
// configuration CUTLASS refuses is found here, not on the GPU.
TEST(CutlassFp8Gemm, CutlassTakesEveryPlannedShape) {
  if (cutlass_fp8_gemm_check(16, 64, 512, 512, 512, 64, {}).code() == StatusCode::kUnsupported &&
      !cutlass_fp8_available()) {
    // A build without the sm_90a kernels answers unsupported for everything.
    GTEST_SKIP() << "no sm_90a kernels in this build";
  }
  for (int m : {1, 4, 16, 17, 33, 64, 65, 130, 256, 2048}) {
    for (auto [n, k] : {std::pair{4608, 3584}, {3584, 3584}, {37888, 3584}, {3584, 18944}, {72, 2560}, {136, 4096}}) {
      for (int splits : {0, 1, 2, 4}) {
        const CutlassFp8Plan plan = cutlass_fp8_plan(m, n, k, 132, splits);
        const Status st = cutlass_fp8_gemm_check(m, n, k, k, k, n + 8, plan);
        EXPECT_TRUE(st.is_ok()) << "m=" << m << " n=" << n << " k=" << k << " tile " << cutlass_fp8_tile_name(plan.tile)
                                << " k_splits " << plan.k_splits << ": " << st.to_string();
      }
    }
  }
}

}  // namespace
}  // namespace crosspoint::cuda
