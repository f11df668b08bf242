// Block-wise FP8 on the GPU against kernels/fp8_block.h's host reference (the CPU model's kernel):
// the per-token-group quantisation bit for bit (its scales transposed to the group-major layout
// cuBLASLt reads, the token stride padded), and the whole linear (quantisation + cuBLASLt's
// block-scaled GEMM on rows padded to a multiple of 4) against
// the reference's double-precision sums of the same codes: fp32 sums in another order and one
// fp16 rounding, rel. L2 < 2e-3 as for the other FP8 GEMMs.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "common/dtype.h"
#include "kernels/cuda/cublaslt_gemm.h"
#include "kernels/cuda/cutlass_fp8_block_gemm.h"
#include "kernels/cuda/device_info.h"
#include "kernels/cuda/fp8_block_quant.h"
#include "kernels/cuda/linear.h"
#include "kernels/fp8_block.h"
#include "kernels_cuda/reference.h"

namespace crosspoint::cuda {
namespace {

using testing::DeviceBuffer;

Fp8BlockLinearArgs args_for(const std::vector<float>& x, int m, int k) {
  Fp8BlockLinearArgs a;
  a.x = x.data();
  a.num_rows = m;
  a.in_features = k;
  a.out_features = 1;
  return a;
}

// The block scales [ceil(N / 128), K / 128] in the device layout: rows padded to
// fp8_block_weight_scale_row(K) floats.
std::vector<float> device_weight_scales(const std::vector<float>& w_scale, int n, int k) {
  const int n_blocks = (n + 127) / 128, k_blocks = k / 128;
  const int64_t row = fp8_block_weight_scale_row(k);
  std::vector<float> out(static_cast<size_t>(n_blocks * row), 0.f);
  for (int bn = 0; bn < n_blocks; ++bn)
    for (int bk = 0; bk < k_blocks; ++bk) out[bn * row + bk] = w_scale[bn * k_blocks + bk];
  return out;
}

// Rows the slice kernel takes (dense; padded to strides of 520 / 520; 384 and 128 values, where
// half a warp has a group and the other half none; 18,944 and 20,608 values, five and six slices,
// the last partial) and rows the per-group kernel takes (strides not a multiple of 8).
TEST(Fp8BlockQuantize, BitExactAgainstTheHostReference) {
  CROSSPOINT_SKIP_WITHOUT_GPU();
  std::mt19937 rng(31);
  struct Case {
    int m, k, x_pad, q_pad;  // row strides k + pad
  };
  for (auto [m, k, x_pad, q_pad] : {Case{1, 3584, 0, 0},
                                    {5, 256, 0, 0},
                                    {130, 1024, 0, 0},
                                    {4, 512, 8, 8},
                                    {3, 384, 0, 0},
                                    {7, 128, 0, 0},
                                    {4, 512, 8, 4},
                                    {5, 256, 2, 0},
                                    {3, 384, 0, 1},
                                    {2, 18944, 0, 0},
                                    {2, 20608, 0, 0}}) {
    auto x = testing::random_f16(rng, static_cast<size_t>(m) * k, -4.f, 4.f);
    std::fill(x.begin() + 128, x.begin() + 256, 0);  // an all-zero group takes the 1e-10 floor
    x[3] = f32_to_f16(60000.f);                      // a large outlier in the first group
    const std::vector<float> xf = testing::f16_to_f32(x);
    const int x_stride = k + x_pad, q_stride = k + q_pad;
    std::vector<uint16_t> x_rows(static_cast<size_t>(m) * x_stride, f32_to_f16(1000.f));  // padding a wrong read shows
    for (int t = 0; t < m; ++t) std::copy_n(x.begin() + static_cast<size_t>(t) * k, k, x_rows.begin() + t * x_stride);
    const int groups = k / 128;
    std::vector<uint8_t> q_ref(static_cast<size_t>(m) * k);
    std::vector<float> s_ref(static_cast<size_t>(m) * groups);  // [m][groups]
    ASSERT_TRUE(fp8_block_quantize_ref(args_for(xf, m, k), q_ref.data(), s_ref.data()).is_ok());
    const int stride = fp8_block_padded_rows(m);  // the tokens of a group, padded as the GEMM wants
    DeviceBuffer<uint16_t> x_dev(x_rows);
    DeviceBuffer<uint8_t> q(static_cast<size_t>(m) * q_stride);
    DeviceBuffer<float> s(static_cast<size_t>(groups) * stride);
    q.poison(0x7F);
    s.poison();
    ASSERT_TRUE(
        fp8_quantize_per_token_group(x_dev.get(), x_stride, q.get(), q_stride, s.get(), stride, m, k, nullptr).is_ok());
    const std::vector<uint8_t> q_rows = q.download();
    std::vector<uint8_t> q_got(static_cast<size_t>(m) * k);
    for (int t = 0; t < m; ++t)
      std::copy_n(q_rows.begin() + static_cast<size_t>(t) * q_stride, k, q_got.begin() + static_cast<size_t>(t) * k);
    EXPECT_EQ(q_got, q_ref) << "m=" << m << " k=" << k << " strides " << x_stride << " / " << q_stride;
    const std::vector<float> s_got = s.download();
    int wrong = 0;
    for (int t = 0; t < m; ++t)
      for (int g = 0; g < groups; ++g) wrong += s_got[static_cast<size_t>(g) * stride + t] != s_ref[t * groups + g];
    EXPECT_EQ(wrong, 0) << "m=" << m << " k=" << k;
  }
  EXPECT_EQ(fp8_quantize_per_token_group(nullptr, 200, nullptr, 200, nullptr, 1, 1, 200, nullptr).code(),
            StatusCode::kUnsupported);
}

// Decode rows, a batch-invariant slab, a prefill; N with a partial last block of channels.
TEST(Fp8BlockLinear, MatchesTheHostReference) {
  CROSSPOINT_SKIP_WITHOUT_GPU();
  auto ctx = CublasLtContext::create();
  ASSERT_TRUE(ctx.is_ok()) << ctx.status().to_string();
  if (!fp8_block_gemm_available(**ctx, 16, 256, 256)) {
    // Hopper with cuBLAS 12.9+ must have it; elsewhere the model refuses these layers at load.
    ASSERT_NE(cuda_device_info().capability(), 90) << "cuBLASLt has no block-scaled FP8 GEMM on this Hopper GPU";
    GTEST_SKIP() << "no block-scaled FP8 GEMM in cuBLASLt on this GPU";
  }
  std::mt19937 rng(32);
  std::uniform_real_distribution<float> scale(1e-4f, 1e-3f);
  for (auto [m, n, k] :
       {std::tuple{1, 256, 512}, {7, 272, 1024}, {64, 1024, 3584}, {100, 9472, 640}, {300, 512, 640}}) {
    const auto x = testing::random_f16(rng, static_cast<size_t>(m) * k, -3.f, 3.f);
    const std::vector<float> xf = testing::f16_to_f32(x);
    const auto w = testing::random_e4m3(rng, static_cast<size_t>(n) * k);
    const int n_blocks = (n + 127) / 128, k_blocks = k / 128;
    std::vector<float> w_scale(static_cast<size_t>(n_blocks) * k_blocks);
    for (auto& s : w_scale) s = scale(rng);
    std::vector<float> y_ref(static_cast<size_t>(m) * n);
    Fp8BlockLinearArgs a = args_for(xf, m, k);
    a.out_features = n;
    a.weight = w.data();
    a.weight_scale = w_scale.data();
    a.y = y_ref.data();
    ASSERT_TRUE(fp8_block_linear_ref(a).is_ok());
    const int64_t row = fp8_block_weight_scale_row(k);
    const std::vector<float> w_scale_dev = device_weight_scales(w_scale, n, k);

    const int padded = fp8_block_padded_rows(m);  // rows the GEMM runs on
    DeviceBuffer<uint16_t> x_dev(x);
    DeviceBuffer<uint8_t> w_dev(w), xq(static_cast<size_t>(padded) * k);
    DeviceBuffer<float> ws(w_scale_dev), xs(static_cast<size_t>(padded) * k_blocks);
    DeviceBuffer<float> ws_m64(fp8_block_scales_m64(w_scale_dev.data(), row, n, k));
    const std::vector<double> ref(y_ref.begin(), y_ref.end());
    // cuBLASLt alone, then with the CUTLASS layout of the scales (CUTLASS's kernel up to 128 rows).
    for (const float* m64 : {static_cast<const float*>(nullptr), static_cast<const float*>(ws_m64.get())}) {
      DeviceBuffer<uint16_t> y(static_cast<size_t>(padded) * n);
      y.poison();
      const Status st = fp8_block_linear_from_fp16(**ctx, x_dev.get(), xq.get(), xs.get(), w_dev.get(), ws.get(),
                                                   y.get(), m, n, k, nullptr, m64);
      ASSERT_TRUE(st.is_ok()) << st.to_string();
      std::vector<uint16_t> got = y.download();
      got.resize(static_cast<size_t>(m) * n);  // the padding rows carry no meaning
      EXPECT_LT(testing::relative_error_f16(got, ref), 2e-3)
          << "m=" << m << " n=" << n << " k=" << k << (m64 != nullptr ? " (cutlass scales)" : " (cublaslt)");
    }
  }
}

// Every CUTLASS tile on its own, at rows below, at and past its token count (several tiles, a
// partial one), against the host reference; each twice, for the same bits.
TEST(CutlassFp8BlockGemm, EveryTileMatchesTheHostReference) {
  CROSSPOINT_SKIP_WITHOUT_GPU();
  if (cuda_device_info().capability() != 90) GTEST_SKIP() << "needs compute capability 9.0";
  std::mt19937 rng(33);
  std::uniform_real_distribution<float> scale(1e-4f, 1e-3f);
  constexpr int n = 200, k = 1024;  // a partial 128-channel block and 64-channel tile
  const auto w = testing::random_e4m3(rng, static_cast<size_t>(n) * k);
  const int n_blocks = (n + 127) / 128, k_blocks = k / 128;
  std::vector<float> w_scale(static_cast<size_t>(n_blocks) * k_blocks);
  for (auto& s : w_scale) s = scale(rng);
  const int64_t row = fp8_block_weight_scale_row(k);
  const std::vector<float> w_scale_dev = device_weight_scales(w_scale, n, k);
  DeviceBuffer<uint8_t> w_dev(w);
  DeviceBuffer<float> ws_m64(fp8_block_scales_m64(w_scale_dev.data(), row, n, k));
  for (CutlassFp8BlockTile tile : kAllCutlassFp8BlockTiles) {
    const int tokens = cutlass_fp8_block_tile_tokens(tile);
    for (int m : {3, tokens, 2 * tokens + 5}) {
      const auto x = testing::random_f16(rng, static_cast<size_t>(m) * k, -3.f, 3.f);
      const std::vector<float> xf = testing::f16_to_f32(x);
      std::vector<float> y_ref(static_cast<size_t>(m) * n);
      Fp8BlockLinearArgs a = args_for(xf, m, k);
      a.out_features = n;
      a.weight = w.data();
      a.weight_scale = w_scale.data();
      a.y = y_ref.data();
      ASSERT_TRUE(fp8_block_linear_ref(a).is_ok());
      const int padded = fp8_block_padded_rows(m);
      DeviceBuffer<uint16_t> x_dev(x);
      DeviceBuffer<uint8_t> xq(static_cast<size_t>(padded) * k);
      DeviceBuffer<float> xs(static_cast<size_t>(padded) * k_blocks);
      ASSERT_TRUE(fp8_quantize_per_token_group(x_dev.get(), k, xq.get(), k, xs.get(), padded, m, k, nullptr).is_ok());
      DeviceBuffer<uint16_t> y(static_cast<size_t>(padded) * n);
      CutlassFp8BlockArgs g;
      g.xq = xq.get();
      g.x_scale = xs.get();
      g.wq = w_dev.get();
      g.w_scale_m64 = ws_m64.get();
      g.y = y.get();
      g.m = padded;
      g.n = n;
      g.k = k;
      y.poison();
      const Status st = cutlass_fp8_block_gemm_on(tile, g, nullptr);
      if (st.code() == StatusCode::kUnsupported) GTEST_SKIP() << st.to_string();  // a build without sm_90a
      ASSERT_TRUE(st.is_ok()) << cutlass_fp8_block_tile_name(tile) << " m=" << m << ": " << st.to_string();
      std::vector<uint16_t> got = y.download();
      got.resize(static_cast<size_t>(m) * n);
      EXPECT_LT(testing::relative_error_f16(got, std::vector<double>(y_ref.begin(), y_ref.end())), 2e-3)
          << cutlass_fp8_block_tile_name(tile) << " m=" << m;
      ASSERT_TRUE(cutlass_fp8_block_gemm_on(tile, g, nullptr).is_ok());
      std::vector<uint16_t> again = y.download();
      again.resize(got.size());
      EXPECT_EQ(again, got) << cutlass_fp8_block_tile_name(tile) << " m=" << m << ": a second run gave other bits";
    }
  }
}

// The CUTLASS kernel's own refusals, and its scale layout from cuBLASLt's (no GPU needed).
TEST(CutlassFp8BlockGemm, RefusesWhatItCannotRunAndLaysOutTheScales) {
  CutlassFp8BlockArgs a;
  // The table on an H100's 132 SMs: o / down (56 channel tiles) take two half-width token tiles
  // from 33 rows, qkv (72) and gate_up (592) one.
  using T = CutlassFp8BlockTile;
  constexpr int kSms = 132, qkv = 4608, o = 3584, gate_up = 37888;
  EXPECT_FALSE(cutlass_fp8_block_tile_for(kCutlassFp8BlockMaxRows + 4, o, kSms).has_value());
  EXPECT_FALSE(cutlass_fp8_block_tile_for(0, o, kSms).has_value());
  for (int n : {qkv, o, gate_up}) {
    EXPECT_EQ(cutlass_fp8_block_tile_for(4, n, kSms), T::k64x16) << n;
    EXPECT_EQ(cutlass_fp8_block_tile_for(20, n, kSms), T::k64x32) << n;
  }
  EXPECT_EQ(cutlass_fp8_block_tile_for(64, o, kSms), T::k64x32);
  EXPECT_EQ(cutlass_fp8_block_tile_for(64, qkv, kSms), T::k64x64);
  EXPECT_EQ(cutlass_fp8_block_tile_for(64, gate_up, kSms), T::k64x64);
  EXPECT_EQ(cutlass_fp8_block_tile_for(128, o, kSms), T::k64x64);
  EXPECT_EQ(cutlass_fp8_block_tile_for(68, qkv, kSms), T::k64x128);
  EXPECT_EQ(cutlass_fp8_block_tile_for(128, gate_up, kSms), T::k64x128);
  a.m = kCutlassFp8BlockMaxRows + 4;  // over the dispatch's tiles
  a.n = 256;
  a.k = 256;
  a.check_only = true;
  EXPECT_EQ(cutlass_fp8_block_gemm(a, nullptr).code(), StatusCode::kUnsupported);
  a.m = 6;  // not a multiple of 4
  EXPECT_EQ(cutlass_fp8_block_gemm(a, nullptr).code(), StatusCode::kInvalidArgument);
  a.m = 8;
  a.k = 200;  // not a multiple of 128
  EXPECT_EQ(cutlass_fp8_block_gemm(a, nullptr).code(), StatusCode::kInvalidArgument);
  // N = 200: two 128-channel block rows, four 64-channel blocks; K = 256: two K blocks; rows padded to 4.
  const std::vector<float> blocks = {1, 2, 0, 0, 3, 4, 0, 0};
  EXPECT_EQ(fp8_block_scales_m64(blocks.data(), 4, 200, 256), (std::vector<float>{1, 1, 3, 3, 2, 2, 4, 4}));
}

}  // namespace
}  // namespace crosspoint::cuda
