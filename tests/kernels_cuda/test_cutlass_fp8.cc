// cutlass_fp8_gemm (CUTLASS's Hopper warp-specialised FP8 GEMM, operands swapped): its tiles,
// table, refusals and CUTLASS's own can_implement on the host, and on Hopper every tile against a
// double-precision matmul of the same e4m3 values, strided outputs with their padding
// untouched, the same bits on every run, and each row's bits independent of the other rows.
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <random>
#include <string>

#include "kernels/cuda/cublaslt_gemm.h"
#include "kernels/cuda/cutlass_fp8_gemm.h"
#include "kernels/cuda/device_info.h"
#include "kernels/cuda/linear.h"
#include "kernels_cuda/reference.h"

namespace crosspoint::cuda {
namespace {

using testing::DeviceBuffer;

constexpr int kH200Sms = 132;

// The dispatch's kernel for these rows and channels on this GPU (or on an H200's 132 SMs
// without one), which every linear shape in the tests has up to 256 rows.
CutlassFp8Tile dispatched(int m, int n) {
  const int sms = cutlass_fp8_available() ? cuda_device_info().num_sms : kH200Sms;
  const std::optional<CutlassFp8Tile> tile = cutlass_fp8_tile_for(m, n, sms);
  return tile.value_or(CutlassFp8Tile::k64x128);
}

// The table the H100 measured for Qwen2.5-7B's linears (docs/cuda.md), on 132 SMs.
TEST(CutlassFp8Gemm, TileByShape) {
  const int qkv = 4608, o = 3584, gate_up = 37888, down = 3584;
  using T = CutlassFp8Tile;
  for (int n : {qkv, o, down}) {
    EXPECT_EQ(cutlass_fp8_tile_for(1, n, kH200Sms), T::k64x16) << n;
    EXPECT_EQ(cutlass_fp8_tile_for(16, n, kH200Sms), T::k64x16) << n;
    EXPECT_EQ(cutlass_fp8_tile_for(17, n, kH200Sms), T::k64x32) << n;
    EXPECT_EQ(cutlass_fp8_tile_for(64, n, kH200Sms), T::k64x64) << n;
  }
  EXPECT_EQ(cutlass_fp8_tile_for(8, gate_up, kH200Sms), T::kPingpong64x16);  // 592 channel tiles
  EXPECT_EQ(cutlass_fp8_tile_for(32, gate_up, kH200Sms), T::kPingpong64x32);
  EXPECT_EQ(cutlass_fp8_tile_for(64, gate_up, kH200Sms), T::kPingpong64x64);
  // 65-128 rows: 64-token tiles on ping-pong CTAs, but qkv's 144 of them spill just past 132
  // SMs while its 72 128-token tiles fit.
  for (int n : {o, gate_up, down}) EXPECT_EQ(cutlass_fp8_tile_for(128, n, kH200Sms), T::kPingpong64x64) << n;
  EXPECT_EQ(cutlass_fp8_tile_for(65, qkv, kH200Sms), T::k64x128);
  EXPECT_EQ(cutlass_fp8_tile_for(128, qkv, kH200Sms), T::k64x128);
  // 129-256 rows: 64x128 while its tiles fit one wave (o, down: 112), else cuBLASLt.
  EXPECT_EQ(cutlass_fp8_tile_for(256, o, kH200Sms), T::k64x128);
  EXPECT_EQ(cutlass_fp8_tile_for(129, down, kH200Sms), T::k64x128);
  EXPECT_EQ(cutlass_fp8_tile_for(129, qkv, kH200Sms), std::nullopt);
  EXPECT_EQ(cutlass_fp8_tile_for(256, gate_up, kH200Sms), std::nullopt);
  EXPECT_EQ(cutlass_fp8_tile_for(257, o, kH200Sms), std::nullopt);
  EXPECT_EQ(cutlass_fp8_tile_for(0, o, kH200Sms), std::nullopt);
  // The default model's narrow linears stay on CUTLASS to 256 rows.
  EXPECT_EQ(cutlass_fp8_tile_for(200, 576, kH200Sms), T::k64x128);
  EXPECT_EQ(cutlass_fp8_tile_for(100, 576, kH200Sms), T::kPingpong64x64);
}

// INT8's table: FP8's where it names a tile, else the cooperative 128x128 above 128 rows and the
// 128x256 from kInt8WideTileMinRows.
TEST(CutlassInt8Gemm, TileByShape) {
  const int qkv = 4608, o = 3584, gate_up = 37888, down = 3584;
  using T = CutlassFp8Tile;
  for (int n : {qkv, o, gate_up, down}) {
    for (int m : {1, 16, 17, 64, 65, 128, 129, 256}) {
      if (cutlass_fp8_tile_for(m, n, kH200Sms)) {
        EXPECT_EQ(cutlass_int8_tile_for(m, n, kH200Sms), cutlass_fp8_tile_for(m, n, kH200Sms)) << m << " " << n;
      }
    }
  }
  EXPECT_EQ(cutlass_int8_tile_for(129, qkv, kH200Sms), T::kCooperative128x128);
  EXPECT_EQ(cutlass_int8_tile_for(256, gate_up, kH200Sms), T::kCooperative128x128);
  EXPECT_EQ(cutlass_int8_tile_for(256, o, kH200Sms), T::k64x128);
  EXPECT_EQ(cutlass_int8_tile_for(256, down, kH200Sms), T::k64x128);
  for (int n : {qkv, o, gate_up, down}) {
    EXPECT_EQ(cutlass_int8_tile_for(257, n, kH200Sms), T::kCooperative128x128) << n;
    EXPECT_EQ(cutlass_int8_tile_for(kInt8WideTileMinRows - 1, n, kH200Sms), T::kCooperative128x128) << n;
    EXPECT_EQ(cutlass_int8_tile_for(kInt8WideTileMinRows, n, kH200Sms), T::kCooperative128x256) << n;
    EXPECT_EQ(cutlass_int8_tile_for(8192, n, kH200Sms), T::kCooperative128x256) << n;
  }
  EXPECT_EQ(cutlass_int8_tile_for(0, o, kH200Sms), std::nullopt);
}

TEST(CutlassFp8Gemm, RefusesBadArgumentsNamingThem) {
  const Status k40 = cutlass_fp8_gemm(CutlassFp8Tile::k64x16, nullptr, 48, nullptr, nullptr, 48, nullptr, nullptr, 64,
                                      4, 64, 40, nullptr);
  EXPECT_EQ(k40.code(), StatusCode::kInvalidArgument);  // K not a multiple of 16 bytes
  EXPECT_NE(k40.message().find("k (40)"), std::string::npos) << k40.to_string();
  EXPECT_EQ(cutlass_fp8_gemm(CutlassFp8Tile::k64x16, nullptr, 64, nullptr, nullptr, 64, nullptr, nullptr, 68, 4, 68, 64,
                             nullptr)
                .code(),
            StatusCode::kInvalidArgument);  // N not a multiple of 8
}

bool no_sm90a_kernels() {
  return !cutlass_fp8_available() &&
         cutlass_fp8_gemm_check(CutlassFp8Tile::k64x16, 16, 64, 512, 512, 512, 64).code() == StatusCode::kUnsupported;
}

// CUTLASS's can_implement on the host, for every kernel at the model's shapes and the tests'
// (neither schedule asks for a workspace): a configuration CUTLASS refuses is found here, not
// on the GPU.
TEST(CutlassFp8Gemm, EveryKernelTakesEveryShapeTheEngineGives) {
  if (no_sm90a_kernels()) GTEST_SKIP() << "no sm_90a kernels in this build";
  for (CutlassFp8Tile tile : kAllCutlassFp8Tiles) {
    for (int m : {1, 4, 16, 17, 33, 64, 65, 130, 256}) {
      for (auto [n, k] : {std::pair{4608, 3584}, {3584, 3584}, {37888, 3584}, {3584, 18944}, {72, 2560}, {136, 4096}}) {
        const Status st = cutlass_fp8_gemm_check(tile, m, n, k, k, k, n + 8);
        EXPECT_TRUE(st.is_ok()) << "m=" << m << " n=" << n << " k=" << k << " tile " << cutlass_fp8_tile_name(tile)
                                << ": " << st.to_string();
      }
    }
  }
}

// The int8 twins take the same shapes (host; can_implement of the int8 instantiations).
TEST(CutlassInt8Gemm, EveryKernelTakesEveryShapeTheEngineGives) {
  if (no_sm90a_kernels()) GTEST_SKIP() << "no sm_90a kernels in this build";
  // The int8-only tiles are refused for e4m3, with the reason.
  for (CutlassFp8Tile tile : {CutlassFp8Tile::kCooperative128x128, CutlassFp8Tile::kCooperative128x256}) {
    const Status fp8 = cutlass_fp8_gemm_check(tile, 256, 4608, 3584, 3584, 3584, 4608);
    EXPECT_EQ(fp8.code(), StatusCode::kUnsupported) << cutlass_fp8_tile_name(tile);
    EXPECT_NE(fp8.to_string().find("int8's only"), std::string::npos) << fp8.to_string();
  }
  for (CutlassFp8Tile tile : kAllCutlassInt8Tiles) {
    for (int m : {1, 16, 33, 64, 130, 256}) {
      for (auto [n, k] : {std::pair{4608, 3584}, {3584, 3584}, {37888, 3584}, {3584, 18944}, {72, 2560}}) {
        const Status st = cutlass_int8_gemm_check(tile, m, n, k, k, k, n + 8);
        EXPECT_TRUE(st.is_ok()) << "m=" << m << " n=" << n << " k=" << k << " tile " << cutlass_fp8_tile_name(tile)
                                << ": " << st.to_string();
      }
    }
    EXPECT_EQ(cutlass_int8_gemm_check(tile, 16, 64, 520, 520, 520, 64).code(), StatusCode::kInvalidArgument);
  }
}

struct Problem {
  std::vector<uint8_t> xq, wq;
  std::vector<float> x_scale, w_scale;
  std::vector<double> ref;  // [M, N]
};

Problem make_problem(std::mt19937& rng, int m, int n, int k) {
  Problem p{testing::random_e4m3(rng, static_cast<size_t>(m) * k),
            testing::random_e4m3(rng, static_cast<size_t>(n) * k),
            {},
            {},
            {}};
  std::uniform_real_distribution<float> scale(1e-4f, 1e-3f);
  p.x_scale.resize(m);
  p.w_scale.resize(n);
  for (auto& s : p.x_scale) s = scale(rng);
  for (auto& s : p.w_scale) s = scale(rng);
  p.ref = testing::matmul_nt_ref(
      m, n, k, [&](int i, int kk) { return testing::e4m3_to_f32(p.xq[static_cast<size_t>(i) * k + kk]); },
      [&](int j, int kk) { return testing::e4m3_to_f32(p.wq[static_cast<size_t>(j) * k + kk]); });
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j)
      p.ref[static_cast<size_t>(i) * n + j] *= static_cast<double>(p.x_scale[i]) * p.w_scale[j];
  return p;
}

// The dispatch's kernels at rows across every tile's boundary (several 128-token tiles too),
// channel counts that leave partial tiles, K that leaves a partial k-block; y written with a
// row stride wider than N.
TEST(CutlassFp8Gemm, MatchesReferenceOnTheDispatchedTile) {
  CROSSPOINT_SKIP_WITHOUT_GPU();
  if (!cutlass_fp8_available()) GTEST_SKIP() << "needs compute capability 9.0 and an sm_90a build";
  std::mt19937 rng(11);
  for (int m : {1, 5, 16, 17, 32, 33, 64, 65, 130, 256}) {
    for (auto [n, k] : {std::pair{72, 2560}, {200, 1024}, {136, 4096}, {64, 528}}) {
      const Problem p = make_problem(rng, m, n, k);
      const int64_t y_stride = n + 8;
      DeviceBuffer<uint8_t> xq(p.xq), wq(p.wq);
      DeviceBuffer<float> xs(p.x_scale), ws(p.w_scale);
      DeviceBuffer<uint16_t> y(static_cast<size_t>(m) * y_stride);
      y.poison();
      auto launch = [&]() {
        return cutlass_fp8_gemm(dispatched(m, n), xq.get(), k, xs.get(), wq.get(), k, ws.get(), y.get(), y_stride, m, n,
                                k, nullptr);
      };
      const Status st = launch();
      ASSERT_TRUE(st.is_ok()) << st.to_string();
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      const std::vector<uint16_t> got = y.download();
      std::vector<uint16_t> packed(static_cast<size_t>(m) * n);
      for (int i = 0; i < m; ++i) {
        for (int j = 0; j < n; ++j) packed[static_cast<size_t>(i) * n + j] = got[i * y_stride + j];
        for (int j = n; j < y_stride; ++j) ASSERT_EQ(got[i * y_stride + j], 0xFFFF) << "padding written, row " << i;
      }
      EXPECT_LT(testing::relative_error_f16(packed, p.ref), 2e-3)
          << "m=" << m << " n=" << n << " k=" << k << " tile " << cutlass_fp8_tile_name(dispatched(m, n));
      ASSERT_TRUE(launch().is_ok());
      EXPECT_EQ(y.download(), got) << "a second run gave other bits: m=" << m << " n=" << n << " k=" << k;
    }
  }
}

// Every kernel, the persistent ping-pong ones included, against the reference at sizes that
// leave partial tiles and k-blocks; each twice, for the same bits.
TEST(CutlassFp8Gemm, EveryKernelMatchesReference) {
  CROSSPOINT_SKIP_WITHOUT_GPU();
  if (!cutlass_fp8_available()) GTEST_SKIP() << "needs compute capability 9.0 and an sm_90a build";
  std::mt19937 rng(14);
  for (int m : {5, 33, 130}) {
    for (auto [n, k] : {std::pair{200, 1024}, {136, 4096}, {3584, 2048}}) {
      const Problem p = make_problem(rng, m, n, k);
      const int64_t y_stride = n + 8;
      DeviceBuffer<uint8_t> xq(p.xq), wq(p.wq);
      DeviceBuffer<float> xs(p.x_scale), ws(p.w_scale);
      for (CutlassFp8Tile tile : kAllCutlassFp8Tiles) {
        DeviceBuffer<uint16_t> y(static_cast<size_t>(m) * y_stride);
        y.poison();
        auto launch = [&]() {
          return cutlass_fp8_gemm(tile, xq.get(), k, xs.get(), wq.get(), k, ws.get(), y.get(), y_stride, m, n, k,
                                  nullptr);
        };
        const Status st = launch();
        ASSERT_TRUE(st.is_ok()) << cutlass_fp8_tile_name(tile) << ": " << st.to_string();
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
        const std::vector<uint16_t> got = y.download();
        std::vector<uint16_t> packed(static_cast<size_t>(m) * n);
        for (int i = 0; i < m; ++i) {
          for (int j = 0; j < n; ++j) packed[static_cast<size_t>(i) * n + j] = got[i * y_stride + j];
          for (int j = n; j < y_stride; ++j)
            ASSERT_EQ(got[i * y_stride + j], 0xFFFF) << cutlass_fp8_tile_name(tile) << " wrote padding, row " << i;
        }
        EXPECT_LT(testing::relative_error_f16(packed, p.ref), 2e-3)
            << cutlass_fp8_tile_name(tile) << " m=" << m << " n=" << n << " k=" << k;
        ASSERT_TRUE(launch().is_ok());
        EXPECT_EQ(y.download(), got) << cutlass_fp8_tile_name(tile) << " gave other bits on a second run";
      }
    }
  }
}

// A row's bits depend only on its own inputs and the tile: the first 5 rows alone equal the
// same rows inside 16 (one tile either way).
TEST(CutlassFp8Gemm, RowsOfOneTileAreIndependent) {
  CROSSPOINT_SKIP_WITHOUT_GPU();
  if (!cutlass_fp8_available()) GTEST_SKIP() << "needs compute capability 9.0 and an sm_90a build";
  std::mt19937 rng(12);
  const int n = 256, k = 3584;
  const Problem p = make_problem(rng, 16, n, k);
  DeviceBuffer<uint8_t> xq(p.xq), wq(p.wq);
  DeviceBuffer<float> xs(p.x_scale), ws(p.w_scale);
  DeviceBuffer<uint16_t> all(static_cast<size_t>(16) * n), some(static_cast<size_t>(5) * n);
  const CutlassFp8Tile tile = CutlassFp8Tile::k64x16;
  ASSERT_TRUE(
      cutlass_fp8_gemm(tile, xq.get(), k, xs.get(), wq.get(), k, ws.get(), all.get(), n, 16, n, k, nullptr).is_ok());
  ASSERT_TRUE(
      cutlass_fp8_gemm(tile, xq.get(), k, xs.get(), wq.get(), k, ws.get(), some.get(), n, 5, n, k, nullptr).is_ok());
  std::vector<uint16_t> first = all.download();
  first.resize(static_cast<size_t>(5) * n);
  EXPECT_EQ(some.download(), first);
}

// fp8_linear (what the engine calls) takes the kernel cutlass_fp8_tile_for names on Hopper, bit
// for bit, and cuBLASLt where it names none: above kFp8CutlassMaxRows rows, and at 129-256
// rows of a linear whose 128-token tiles would not fit one wave.
TEST(CutlassFp8Gemm, Fp8LinearTakesTheKernelTheTableNames) {
  CROSSPOINT_SKIP_WITHOUT_GPU();
  if (!cutlass_fp8_available()) GTEST_SKIP() << "needs compute capability 9.0 and an sm_90a build";
  auto ctx = CublasLtContext::create();
  ASSERT_TRUE(ctx.is_ok()) << ctx.status().to_string();
  std::mt19937 rng(13);
  const int sms = cuda_device_info().num_sms, k = 256;  // one k-block: the choice, not the sums, is under test
  const int wide = 64 * sms + 8;                        // more 64-channel tiles than SMs
  for (auto [m, n] : {std::pair{1, 136},
                      {2, 136},
                      {9, 136},
                      {64, 136},
                      {9, wide},
                      {100, 136},
                      {100, wide},
                      {kFp8CutlassMaxRows, 136},
                      {kFp8CutlassMaxRows, wide},
                      {kFp8CutlassMaxRows + 1, 136}}) {
    const Problem p = make_problem(rng, m, n, k);
    DeviceBuffer<uint8_t> xq(p.xq), wq(p.wq);
    DeviceBuffer<float> xs(p.x_scale), ws(p.w_scale), scratch(static_cast<size_t>(m) * n);
    DeviceBuffer<uint16_t> via_linear(static_cast<size_t>(m) * n), direct(static_cast<size_t>(m) * n);
    ASSERT_TRUE(fp8_linear(**ctx, xq.get(), k, xs.get(), wq.get(), k, ws.get(), via_linear.get(), n, m, n, k,
                           scratch.get(), nullptr)
                    .is_ok());
    const std::optional<CutlassFp8Tile> tile = cutlass_fp8_tile_for(m, n, sms);
    EXPECT_EQ(tile.has_value(), m <= 128 || (m <= kFp8CutlassMaxRows && n == 136)) << "m=" << m << " n=" << n;
    ASSERT_TRUE(cutlass_fp8_gemm(tile.value_or(CutlassFp8Tile::k64x128), xq.get(), k, xs.get(), wq.get(), k, ws.get(),
                                 direct.get(), n, m, n, k, nullptr)
                    .is_ok());
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const std::vector<uint16_t> got = via_linear.download();
    EXPECT_LT(testing::relative_error_f16(got, p.ref), 2e-3) << "m=" << m << " n=" << n;
    if (tile) {
      EXPECT_EQ(got, direct.download()) << "fp8_linear did not take " << cutlass_fp8_tile_name(*tile) << " at m=" << m
                                        << " n=" << n;
    }
  }
}

}  // namespace
}  // namespace crosspoint::cuda
