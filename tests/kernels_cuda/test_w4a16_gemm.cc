// W4A16: GPTQ repack (host), the rows -> kernel choice, and the CUDA GEMM kernels (w4a16_gemm's
// dispatch, kLargeTile in w4a16_gemm_large.cu, kWgmma in w4a16_gemm_wgmma.cu) against a plain
// dequantise-then-matmul reference on random GPTQ tensors at awkward sizes, with and without
// act-order; the kernels' launch plans on the host.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <tuple>

#include "common/dtype.h"
#include "kernels/cuda/w4a16_gemm.h"
#include "kernels/cuda/w4a16_gemv.h"
#include "kernels_cuda/reference.h"
#include "kernels_cuda/w4a16_test_util.h"

namespace crosspoint::cuda {
namespace {

using testing::DeviceBuffer;

using testing::GptqLinear;
using testing::make_gptq;

// Runs repack + (permute) + GEMM on the device `repeats` times and returns each y [M, N] fp16.
std::vector<std::vector<uint16_t>> run_w4a16(const GptqLinear& lin, const std::vector<uint16_t>& x, int m,
                                             bool pass_g_idx, int repeats = 1) {
  auto packed = w4a16_repack(lin.qweight.data(), lin.scales.data(), pass_g_idx ? lin.g_idx.data() : nullptr, lin.k,
                             lin.n, lin.group_size, "test.qweight");
  EXPECT_TRUE(packed.is_ok()) << packed.status().to_string();
  if (!packed.is_ok()) return {};
  DeviceBuffer<uint32_t> weight(packed->weight), scales(packed->scales);
  DeviceBuffer<uint16_t> x_dev(x), x_perm(x.size()), y(static_cast<size_t>(m) * lin.n);
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
    const Status st =
        w4a16_gemm(x_in, lin.k, weight.get(), scales.get(), y.get(), lin.n, m, lin.n, lin.k, lin.group_size, nullptr);
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
  const auto ref = testing::matmul_nt_ref(
      m, n, k, [&](int i, int kk) { return xf[static_cast<size_t>(i) * k + kk]; },
      [&](int j, int kk) { return lin.weight(kk, j); });
  // fp16 weights after dequant (one rounding of s*(q-8)) and fp16 output: ~1e-3.
  for (size_t r = 0; r < ys.size(); ++r) {
    ASSERT_EQ(ys[r].size(), static_cast<size_t>(m) * n);
    EXPECT_LT(testing::relative_error_f16(ys[r], ref), 3e-3)
        << "m=" << m << " n=" << n << " k=" << k << " g=" << group_size << " repeat " << r;
  }
}

TEST(W4A16Repack, RefusesShapesTheKernelCannotRun) {
  std::vector<int32_t> qweight(128 * 64 / 8, 0);
  std::vector<uint16_t> scales(64 * 2, 0x3C00);
  EXPECT_EQ(w4a16_repack(qweight.data(), scales.data(), nullptr, 96, 64, 32, "l.qweight").status().code(),
            StatusCode::kUnsupported);
  EXPECT_EQ(w4a16_repack(qweight.data(), scales.data(), nullptr, 128, 40, 128, "l.qweight").status().code(),
            StatusCode::kUnsupported);
  EXPECT_EQ(w4a16_repack(qweight.data(), scales.data(), nullptr, 128, 64, 96, "l.qweight").status().code(),
            StatusCode::kUnsupported);
  const auto bad = w4a16_repack(qweight.data(), scales.data(), nullptr, 128, 40, 128, "layers.0.q_proj");
  EXPECT_NE(bad.status().message().find("layers.0.q_proj"), std::string::npos);
  std::vector<int32_t> g_idx(128, 0);
  g_idx[5] = 7;  // only 1 group exists
  EXPECT_EQ(w4a16_repack(qweight.data(), scales.data(), g_idx.data(), 128, 64, 128, "l").status().code(),
            StatusCode::kCorrupt);
  std::vector<int32_t> uneven(128, 0);
  for (int i = 0; i < 128; ++i) uneven[i] = i < 100 ? 0 : 1;  // 100 + 28 rows, group size 64
  EXPECT_EQ(w4a16_repack(qweight.data(), scales.data(), uneven.data(), 128, 64, 64, "l").status().code(),
            StatusCode::kUnsupported);
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
  for (int m : {1, 40}) {  // the GEMV's rows and the larger kernels'
    EXPECT_EQ(w4a16_gemm(nullptr, 100, nullptr, nullptr, nullptr, 64, m, 64, 100, 128, nullptr).code(),
              StatusCode::kUnsupported);
    EXPECT_EQ(w4a16_gemm(nullptr, 128, nullptr, nullptr, nullptr, 20, m, 20, 128, 128, nullptr).code(),
              StatusCode::kUnsupported);
    EXPECT_EQ(w4a16_gemm(nullptr, 128, nullptr, nullptr, nullptr, 64, m, 64, 128, 96, nullptr).code(),
              StatusCode::kUnsupported);
    EXPECT_EQ(w4a16_gemm(nullptr, 128, nullptr, nullptr, nullptr, 64, m, 64, 128, 128, nullptr).code(),
              StatusCode::kInvalidArgument);
  }
  EXPECT_EQ(w4a16_gemm_with(W4A16Kernel::kGemv, reinterpret_cast<const uint16_t*>(16), 128,
                            reinterpret_cast<const uint32_t*>(16), reinterpret_cast<const uint32_t*>(16),
                            reinterpret_cast<uint16_t*>(16), 64, 9, 64, 128, 128, nullptr)
                .code(),
            StatusCode::kInvalidArgument);  // the GEMV serves at most 8 rows
}

// The table of w4a16_gemm.h, on the host.
TEST(W4A16Gemm, RowsPickTheKernel) {
  for (int m = 1; m <= kW4A16GemvMaxRows; ++m) {
    EXPECT_EQ(w4a16_kernel_for(m, 4608, 3584, true), W4A16Kernel::kGemv) << m;
    EXPECT_EQ(w4a16_kernel_for(m, 4608, 3584, false), W4A16Kernel::kGemv) << m;
  }
  for (int m : {kW4A16GemvMaxRows + 1, 16, 17, 128, 2048}) {
    EXPECT_EQ(w4a16_kernel_for(m, 4608, 3584, true), W4A16Kernel::kWgmma) << m;
    EXPECT_EQ(w4a16_kernel_for(m, 4608, 3584, false), W4A16Kernel::kLargeTile) << m;
    EXPECT_EQ(w4a16_kernel_for(m, 4608 + 16, 3584, true), W4A16Kernel::kLargeTile) << m;  // N % 64 != 0
    EXPECT_EQ(w4a16_kernel_for(m, 4608, 1 << 27, true), W4A16Kernel::kLargeTile) << m;    // K beyond wgmma's index
  }
}

TEST(W4A16Gemm, MatchesReferenceAtAwkwardSizes) {
  CROSSPOINT_SKIP_WITHOUT_GPU();
  struct Case {
    int m, n, k, g;
  };
  const Case cases[] = {{1, 48, 192, 64},    {3, 272, 320, 128},   {7, 16, 64, -1},    {16, 80, 512, 128},
                        {17, 64, 1024, 128}, {33, 112, 384, 128},  {64, 32, 256, 64},  {65, 400, 640, 128},
                        {130, 96, 384, 128}, {1, 3584, 3584, 128}, {5, 512, 3584, 128}};
  uint32_t seed = 100;
  for (const auto& c : cases) check_w4a16(c.m, c.n, c.k, c.g, false, seed++);
}

// The engine's dispatch (w4a16_gemm) gives the same bits every run at every M, the rows where
// wgmma splits K across a cluster included: no reduction whose order depends on which block
// finishes first.
TEST(W4A16Gemm, EngineDispatchGivesTheSameBitsEveryRun) {
  CROSSPOINT_SKIP_WITHOUT_GPU();
  std::mt19937 rng(2026);
  const GptqLinear lin = make_gptq(rng, 3584, 512, 128, false);  // 56 K chunks on 8 N tiles: splits
  for (int m : {1, 6, 7, 12, 16, 17, 40, 130}) {
    const auto x = testing::random_f16(rng, static_cast<size_t>(m) * lin.k, -1.f, 1.f);
    const auto ys = run_w4a16(lin, x, m, true, /*repeats=*/12);
    ASSERT_EQ(ys.size(), 12u);
    for (size_t r = 1; r < ys.size(); ++r) EXPECT_EQ(ys[r], ys[0]) << "m=" << m << " repeat " << r;
  }
}

TEST(W4A16Gemm, EveryKernelMatchesReference) {
  CROSSPOINT_SKIP_WITHOUT_GPU();
  std::mt19937 rng(31);
  for (W4A16Kernel kernel : {W4A16Kernel::kGemv, W4A16Kernel::kLargeTile, W4A16Kernel::kWgmma}) {
    if (kernel == W4A16Kernel::kWgmma && !w4a16_wgmma_supported()) continue;
    for (auto [m, n, k] : {std::tuple{1, 320, 1024}, {8, 64, 4096}, {16, 3584, 640}, {70, 192, 2048}}) {
      if (kernel == W4A16Kernel::kGemv && m > kW4A16GemvKernelMaxRows) continue;
      const GptqLinear lin = make_gptq(rng, k, n, 128, false);
      const auto x = testing::random_f16(rng, static_cast<size_t>(m) * k, -1.f, 1.f);
      auto packed = w4a16_repack(lin.qweight.data(), lin.scales.data(), nullptr, k, n, 128, "t");
      ASSERT_TRUE(packed.is_ok());
      DeviceBuffer<uint32_t> weight(packed->weight), scales(packed->scales);
      DeviceBuffer<uint16_t> x_dev(x), y(static_cast<size_t>(m) * n);
      y.poison();
      const Status st =
          w4a16_gemm_with(kernel, x_dev.get(), k, weight.get(), scales.get(), y.get(), n, m, n, k, 128, nullptr);
      ASSERT_TRUE(st.is_ok()) << st.to_string();
      const auto xf = testing::f16_to_f32(x);
      const auto ref = testing::matmul_nt_ref(
          m, n, k, [&](int i, int kk) { return xf[static_cast<size_t>(i) * k + kk]; },
          [&](int j, int kk) { return lin.weight(kk, j); });
      EXPECT_LT(testing::relative_error_f16(y.download(), ref), 3e-3)
          << "kernel " << static_cast<int>(kernel) << " m=" << m << " n=" << n << " k=" << k;
    }
  }
}

// ---- the larger-batch kernel (w4a16_gemm_large.cu) ----

// One launch of a W4A16 GEMM on a prepared device problem: a kernel through w4a16_gemm_with,
// or the wgmma kernel with forced K splits.
struct LargeProblem {
  GptqLinear lin;
  int m = 0;
  int64_t x_stride = 0, y_stride = 0;
  std::vector<uint16_t> x;  // [M, x_stride] fp16 (padding random too)
  std::vector<double> ref;  // [M, N] double
};

LargeProblem make_large_problem(uint32_t seed, int m, int n, int k, int group_size, int64_t x_pad, int64_t y_pad,
                                bool act_order = false) {
  std::mt19937 rng(seed);
  LargeProblem p;
  p.lin = make_gptq(rng, k, n, group_size, act_order);
  p.m = m;
  p.x_stride = k + x_pad;
  p.y_stride = n + y_pad;
  p.x = testing::random_f16(rng, static_cast<size_t>(m) * p.x_stride, -1.f, 1.f);
  p.ref = testing::w4a16_reference(p.lin, p.x, m, p.x_stride);
  return p;
}

// Runs `launch` `repeats` times, each time on a NaN-poisoned y [M, y_stride]; checks the
// padding columns of y are left untouched. Returns each y.
template <typename Launch>
std::vector<std::vector<uint16_t>> run_large(const LargeProblem& p, int repeats, Launch launch) {
  const int n = p.lin.n, k = p.lin.k;
  auto packed =
      w4a16_repack(p.lin.qweight.data(), p.lin.scales.data(), p.lin.g_idx.data(), k, n, p.lin.group_size, "t");
  EXPECT_TRUE(packed.is_ok()) << packed.status().to_string();
  if (!packed.is_ok()) return {};
  DeviceBuffer<uint32_t> weight(packed->weight), scales(packed->scales);
  std::vector<uint16_t> x = p.x;
  if (!packed->k_perm.empty()) {  // act-order: permute on the host, as w4a16_permute_columns does on the device
    for (int i = 0; i < p.m; ++i)
      for (int kk = 0; kk < k; ++kk) x[i * p.x_stride + kk] = p.x[i * p.x_stride + packed->k_perm[kk]];
  }
  // y [M + kGuardRows, y_stride]: rows past M must stay poisoned too (token tiles past M).
  constexpr int kGuardRows = 3;
  DeviceBuffer<uint16_t> x_dev(x), y(static_cast<size_t>(p.m + kGuardRows) * p.y_stride);
  std::vector<std::vector<uint16_t>> out;
  for (int r = 0; r < repeats; ++r) {
    y.poison();
    const Status st =
        launch(x_dev.get(), p.x_stride, weight.get(), scales.get(), y.get(), p.y_stride, p.m, n, k, p.lin.group_size);
    EXPECT_TRUE(st.is_ok()) << st.to_string();
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const auto y_padded = y.download();
    std::vector<uint16_t> y_dense(static_cast<size_t>(p.m) * n);
    bool padding_untouched = true;
    for (int i = 0; i < p.m; ++i) {
      for (int j = 0; j < p.y_stride; ++j) {
        const uint16_t v = y_padded[i * p.y_stride + j];
        if (j < n) y_dense[static_cast<size_t>(i) * n + j] = v;
        else padding_untouched &= v == 0xFFFF;
      }
    }
    for (size_t e = static_cast<size_t>(p.m) * p.y_stride; e < y_padded.size(); ++e)
      padding_untouched &= y_padded[e] == 0xFFFF;
    EXPECT_TRUE(padding_untouched) << "y padding columns or rows past M were written";
    out.push_back(std::move(y_dense));
  }
  return out;
}

// Relative L2 error < 3e-3 (as the other W4A16 tests) and no element off by more than 2 %
// of the largest reference magnitude (catches a wrong row or column that L2 would average away).
void expect_close(const std::vector<uint16_t>& y, const std::vector<double>& ref, const std::string& what) {
  ASSERT_EQ(y.size(), ref.size()) << what;
  EXPECT_LT(testing::relative_error_f16(y, ref), 3e-3) << what;
  double max_ref = 0, max_err = 0;
  size_t worst = 0;  // element of the largest error, named in the message (row-major [M, N] index)
  for (size_t i = 0; i < ref.size(); ++i) {
    max_ref = std::max(max_ref, std::fabs(ref[i]));
    double err = std::fabs(crosspoint::f16_to_f32(y[i]) - ref[i]);
    if (std::isnan(err)) err = std::numeric_limits<double>::infinity();  // a NaN output is the worst error
    if (err > max_err) {
      max_err = err;
      worst = i;
    }
  }
  EXPECT_LE(max_err, 0.02 * max_ref) << what << "; worst element " << worst << " (flat [M, N] index): got "
                                     << crosspoint::f16_to_f32(y[worst]) << ", want " << ref[worst];
}

std::string describe(const char* name, int m, int n, int k, int g, int64_t xs, int64_t ys) {
  return std::string(name) + " m=" + std::to_string(m) + " n=" + std::to_string(n) + " k=" + std::to_string(k) +
         " g=" + std::to_string(g) + " x_stride=" + std::to_string(xs) + " y_stride=" + std::to_string(ys);
}

// kWgmma (w4a16_gemm_wgmma.cu) runs beside kLargeTile where the device has it (compute
// capability 9.0) and N allows (N % 64 == 0); elsewhere it must be refused cleanly.
const W4A16Kernel kLargeKernels[] = {W4A16Kernel::kLargeTile, W4A16Kernel::kWgmma};
const char* kernel_name(W4A16Kernel kernel) { return kernel == W4A16Kernel::kLargeTile ? "kLargeTile" : "kWgmma"; }
// True when `kernel` cannot run this N on this device; then checks that it is refused with
// kUnsupported (before any launch) and the caller skips the comparison.
bool expect_refused(W4A16Kernel kernel, const LargeProblem& p) {
  if (kernel != W4A16Kernel::kWgmma) return false;
  if (p.lin.n % 64 == 0 && w4a16_wgmma_supported()) return false;
  const Status st =
      w4a16_gemm_with(kernel, reinterpret_cast<const uint16_t*>(16), p.x_stride, reinterpret_cast<const uint32_t*>(16),
                      reinterpret_cast<const uint32_t*>(16), reinterpret_cast<uint16_t*>(16), p.y_stride, p.m, p.lin.n,
                      p.lin.k, p.lin.group_size, nullptr);
  EXPECT_EQ(st.code(), StatusCode::kUnsupported) << kernel_name(kernel) << " n=" << p.lin.n << ": " << st.to_string();
  return true;
}

auto kernel_launch(W4A16Kernel kernel) {
  return [kernel](const uint16_t* x, int64_t xs, const uint32_t* w, const uint32_t* s, uint16_t* y, int64_t ys, int m,
                  int n, int k, int g) { return w4a16_gemm_with(kernel, x, xs, w, s, y, ys, m, n, k, g, nullptr); };
}

TEST(W4A16LargePlan, BlockRowsFollowM) {
  EXPECT_EQ(w4a16_large_block_rows(9), 32);
  EXPECT_EQ(w4a16_large_block_rows(32), 32);
  EXPECT_EQ(w4a16_large_block_rows(33), 64);
  EXPECT_EQ(w4a16_large_block_rows(64), 64);
  EXPECT_EQ(w4a16_large_block_rows(65), 128);
  EXPECT_EQ(w4a16_large_block_rows(256), 128);
  const W4A16LargePlan p = w4a16_large_plan(200, 272);
  EXPECT_EQ(p.block_rows, 128);
  EXPECT_EQ(p.block_cols, 128);
  EXPECT_EQ(p.grid_m, 2);
  EXPECT_EQ(p.grid_n, 3);  // 17 n16 blocks in blocks of 8
  for (int m : {9, 17, 33, 64, 100, 128, 200, 256, 2048}) {
    for (int n : {16, 48, 272, 4608, 37888}) {
      const W4A16LargePlan q = w4a16_large_plan(m, n);
      EXPECT_GE(q.grid_m * q.block_rows, m);
      EXPECT_LT((q.grid_m - 1) * q.block_rows, m);
      EXPECT_GE(q.grid_n * q.block_cols, n);
      EXPECT_LT((q.grid_n - 1) * q.block_cols, n);
    }
  }
}

TEST(W4A16GemmLarge, BothLargeKernelsMatchReferenceAtAwkwardSizes) {
  CROSSPOINT_SKIP_WITHOUT_GPU();
  // Every M x every N; K rotates over 3584, 192, 64 (3584 only where the double reference
  // stays cheap, M*N*K < 3e8); the group size and the padding of x and y (odd y strides
  // take the scalar store path) rotate too.
  const int ms[] = {9, 17, 33, 64, 100, 128, 200, 256};
  const int ns[] = {16, 48, 272, 4608};
  const int groups[] = {128, 64, -1};
  uint32_t seed = 500;
  int case_idx = 0;
  for (int m : ms) {
    for (int n : ns) {
      const int ks[] = {3584, 192, 3584, 64};
      int k = ks[(case_idx + case_idx / 4) % 4];  // shifts by one per M so each N meets each K
      if (static_cast<double>(m) * n * k >= 3e8) k = m % 2 == 0 ? 192 : 64;
      const int g = k == 64 && groups[case_idx % 3] == 128 ? 64 : groups[case_idx % 3];
      const int64_t x_pad = (case_idx % 3) * 8, y_pad = case_idx % 4;
      ++case_idx;
      const LargeProblem p = make_large_problem(seed++, m, n, k, g, x_pad, y_pad);
      for (W4A16Kernel kernel : kLargeKernels) {
        if (expect_refused(kernel, p)) continue;
        const auto ys = run_large(p, 1, kernel_launch(kernel));
        ASSERT_EQ(ys.size(), 1u);
        expect_close(ys[0], p.ref, describe(kernel_name(kernel), m, n, k, g, p.x_stride, p.y_stride));
      }
    }
  }
}

TEST(W4A16GemmLarge, FullWidthQkvShape) {
  CROSSPOINT_SKIP_WITHOUT_GPU();
  // The 7B fused qkv (N = 4608, K = 3584) at an M that is not a multiple of 16.
  const LargeProblem p = make_large_problem(900, 100, 4608, 3584, 128, 0, 0);
  for (W4A16Kernel kernel : kLargeKernels) {
    if (expect_refused(kernel, p)) continue;
    const auto ys = run_large(p, 1, kernel_launch(kernel));
    ASSERT_EQ(ys.size(), 1u);
    expect_close(ys[0], p.ref, describe(kernel_name(kernel), 100, 4608, 3584, 128, p.x_stride, p.y_stride));
  }
}

TEST(W4A16GemmLarge, ActOrderMatchesReference) {
  CROSSPOINT_SKIP_WITHOUT_GPU();
  const LargeProblem p = make_large_problem(800, 72, 144, 768, 128, 0, 0, /*act_order=*/true);
  for (W4A16Kernel kernel : kLargeKernels) {
    if (expect_refused(kernel, p)) continue;
    const auto ys = run_large(p, 1, kernel_launch(kernel));
    ASSERT_EQ(ys.size(), 1u);
    expect_close(ys[0], p.ref, std::string(kernel_name(kernel)) + " act-order m=72 n=144 k=768");
  }
  check_w4a16(72, 144, 768, 128, true, 801);  // through w4a16_gemm and w4a16_permute_columns
}

// ---- the Hopper kernel (w4a16_gemm_wgmma.cu, kWgmma) ----

#define CROSSPOINT_SKIP_WITHOUT_WGMMA() \
  CROSSPOINT_SKIP_WITHOUT_GPU();        \
  if (!w4a16_wgmma_supported()) GTEST_SKIP() << "kWgmma needs a compute capability 9.0 GPU"

auto wgmma_split_launch(int k_splits, int tail_tiles = 0, int tail_splits = 0) {
  return [=](const uint16_t* x, int64_t xs, const uint32_t* w, const uint32_t* s, uint16_t* y, int64_t ys, int m, int n,
             int k, int g) {
    W4A16WgmmaOptions options;
    options.k_splits = k_splits;
    options.tail_tiles = tail_tiles;
    options.tail_splits = tail_splits;
    return w4a16_gemm_wgmma(x, xs, w, s, y, ys, m, n, k, g == -1 ? k : g, options, nullptr);
  };
}

TEST(W4A16GemmWgmma, RefusesKBeyondItsScaleIndexLimitWithoutLaunching) {
  // No GPU needed: the K check comes before the device query; 2^27 = 134,217,728 rows of K.
  const Status st =
      w4a16_gemm_wgmma(nullptr, 1 << 27, nullptr, nullptr, nullptr, 64, 32, 64, 1 << 27, 1 << 27, {}, nullptr);
  EXPECT_EQ(st.code(), StatusCode::kUnsupported) << st.to_string();
  EXPECT_NE(st.to_string().find("k = 134217728"), std::string::npos) << st.to_string();
}

TEST(W4A16GemmWgmma, RefusesNNotAMultipleOf64AndOtherDevicesWithoutLaunching) {
  // No GPU needed: the N check comes before the device query.
  for (int n : {16, 48, 272, 4624}) {
    const Status st =
        w4a16_gemm_with(W4A16Kernel::kWgmma, nullptr, 128, nullptr, nullptr, nullptr, n, 32, n, 128, 128, nullptr);
    EXPECT_EQ(st.code(), StatusCode::kUnsupported) << st.to_string();
    EXPECT_NE(st.message().find("n = " + std::to_string(n)), std::string::npos) << st.to_string();
    const Status direct = w4a16_gemm_wgmma(nullptr, 128, nullptr, nullptr, nullptr, n, 32, n, 128, 128, {}, nullptr);
    EXPECT_EQ(direct.code(), StatusCode::kUnsupported) << direct.to_string();
  }
  if (!w4a16_wgmma_supported()) {  // CPU-only CI, or a GPU other than compute capability 9.0
    const Status st = w4a16_gemm_wgmma(nullptr, 128, nullptr, nullptr, nullptr, 128, 32, 128, 128, 128, {}, nullptr);
    EXPECT_EQ(st.code(), StatusCode::kUnsupported) << st.to_string();
    EXPECT_NE(st.message().find("compute capability"), std::string::npos) << st.to_string();
  }
}

TEST(W4A16WgmmaPlan, TokenTilesGridAndSplits) {
  EXPECT_EQ(w4a16_wgmma_token_tile(1), 16);
  EXPECT_EQ(w4a16_wgmma_token_tile(16), 16);
  EXPECT_EQ(w4a16_wgmma_token_tile(17), 32);
  EXPECT_EQ(w4a16_wgmma_token_tile(64), 64);
  EXPECT_EQ(w4a16_wgmma_token_tile(100), 64);  // 2 warpgroups forced above 64 rows: tiles of 64
  EXPECT_EQ(w4a16_wgmma_token_tile(2048), 64);
  // Wide blocks (4 warpgroups, 256 channels) above 64 rows, on token tiles of 128 rows.
  EXPECT_EQ(w4a16_wgmma_warp_groups_for(64), 2);
  EXPECT_EQ(w4a16_wgmma_warp_groups_for(65), kW4A16WgmmaWideWarpGroups);
  EXPECT_EQ(w4a16_wgmma_warp_groups_for(2048), kW4A16WgmmaWideWarpGroups);
  EXPECT_EQ(w4a16_wgmma_token_tile(40, kW4A16WgmmaWideWarpGroups), 128);
  EXPECT_EQ(w4a16_wgmma_token_tile(100, kW4A16WgmmaWideWarpGroups), 128);
  EXPECT_EQ(w4a16_wgmma_token_tile(300, kW4A16WgmmaWideWarpGroups), 128);
  const W4A16WgmmaPlan wide =
      w4a16_wgmma_plan(300, 37888, 3584, 132, 1, kW4A16WgmmaSplitCostChunks, nullptr, kW4A16WgmmaWideWarpGroups);
  EXPECT_EQ(wide.block_cols, 256);
  EXPECT_EQ(wide.grid_n, 148);
  EXPECT_EQ(wide.grid_m, 3);
  const W4A16WgmmaPlan p = w4a16_wgmma_plan(300, 4608 + 64, 192, 132, 1, kW4A16WgmmaSplitCostChunks);
  EXPECT_EQ(p.token_tile, 64);
  EXPECT_EQ(p.block_cols, 128);
  EXPECT_EQ(p.grid_m, 5);
  EXPECT_EQ(p.grid_n, 37);   // 36 full blocks and one of 64 columns
  EXPECT_EQ(p.k_splits, 1);  // 3 chunks: too few to split
  // 7B fused qkv at M = 16: 36 tiles on 132 SMs x 3 blocks, 56 chunks: split to fill the GPU.
  const W4A16WgmmaPlan qkv = w4a16_wgmma_plan(16, 4608, 3584, 132, 3, 16.0);
  EXPECT_GT(qkv.k_splits, 1);
  EXPECT_LE(qkv.grid_n * qkv.k_splits, 132 * 3);
  for (int m : {1, 9, 17, 33, 64, 100, 128, 200, 256, 300, 2048}) {
    for (auto [n, k] : {std::pair{64, 64}, {128, 192}, {4608, 3584}, {37888, 3584}, {3584, 18944}}) {
      const W4A16WgmmaPlan q = w4a16_wgmma_plan(m, n, k, 132, 2, 16.0);
      EXPECT_TRUE(q.k_splits == 1 || k / 64 / q.k_splits >= 4) << "m=" << m << " n=" << n << " k=" << k;
      EXPECT_GE(q.grid_m * q.token_tile, m);
      EXPECT_LT((q.grid_m - 1) * q.token_tile, m);
      EXPECT_EQ(q.grid_n, (n + q.block_cols - 1) / q.block_cols);
    }
  }
}

// A last partial wave of whole tiles is split (the 7B gate_up at M = 64 on 2-warpgroup blocks,
// at 128 and 256 on wide ones); everything else keeps the uniform plan.
TEST(W4A16WgmmaPlan, SplitsOnlyTheTilesOfALastPartialWave) {
  constexpr double kCost = kW4A16WgmmaSplitCostChunks;
  constexpr int kWide = kW4A16WgmmaWideWarpGroups;
  const W4A16WgmmaPlan gate_up = w4a16_wgmma_plan(64, 37888, 3584, 132, 2, kCost);  // 296 tiles, 264 slots
  EXPECT_EQ(gate_up.grid_n * gate_up.grid_m, 296);
  EXPECT_EQ(gate_up.k_splits, 1);
  EXPECT_EQ(gate_up.full_tiles, 264);
  EXPECT_EQ(gate_up.tail_splits, 8);  // 32 tail tiles x 8 = 256 blocks <= one wave
  const W4A16WgmmaPlan gate_up_128 =
      w4a16_wgmma_plan(128, 37888, 3584, 132, 1, kCost, nullptr, kWide);  // 148 tiles, 132 slots
  EXPECT_EQ(gate_up_128.grid_n * gate_up_128.grid_m, 148);
  EXPECT_EQ(gate_up_128.full_tiles, 132);
  EXPECT_EQ(gate_up_128.tail_splits, 8);
  const W4A16WgmmaPlan gate_up_256 =
      w4a16_wgmma_plan(256, 37888, 3584, 132, 1, kCost, nullptr, kWide);  // two whole waves + 32 tiles
  EXPECT_EQ(gate_up_256.full_tiles, 264);
  EXPECT_EQ(gate_up_256.tail_splits, 4);
  const W4A16WgmmaPlan prefill =
      w4a16_wgmma_plan(2048, 37888, 3584, 132, 1, kCost, nullptr, kWide);  // 2,368 tiles: the tail is 124 of 132
  EXPECT_EQ(prefill.grid_n * prefill.grid_m, 2368);
  EXPECT_EQ(prefill.full_tiles, prefill.grid_n * prefill.grid_m);
  const W4A16WgmmaPlan qkv = w4a16_wgmma_plan(64, 4608, 3584, 132, 2, kCost);  // fewer tiles than slots: uniform split
  EXPECT_EQ(qkv.full_tiles, 36);
  EXPECT_EQ(qkv.tail_splits, qkv.k_splits);
  for (int m : {1, 17, 64, 128, 256, 300, 2048}) {
    for (auto [n, k] : {std::pair{64, 64}, {4608, 3584}, {37888, 3584}, {3584, 18944}, {152064, 3584}}) {
      for (int blocks_per_sm : {1, 2, 3}) {
        const W4A16WgmmaPlan q = w4a16_wgmma_plan(m, n, k, 132, blocks_per_sm, kCost);
        const int tiles = q.grid_n * q.grid_m;
        SCOPED_TRACE(::testing::Message() << "m=" << m << " n=" << n << " k=" << k << " blocks/SM=" << blocks_per_sm);
        EXPECT_GE(q.full_tiles, 0);
        EXPECT_LE(q.full_tiles, tiles);
        EXPECT_GE(q.tail_splits, 1);
        EXPECT_LE(q.k_splits, 8);  // one cluster per tile
        EXPECT_LE(q.tail_splits, 8);
        EXPECT_TRUE(q.tail_splits == 1 || k / 64 / q.tail_splits >= 4);
        if (q.full_tiles < tiles) {
          EXPECT_EQ(q.k_splits, 1);
          EXPECT_EQ(q.full_tiles % (132 * blocks_per_sm), 0);                      // whole waves
          EXPECT_LE((tiles - q.full_tiles) * q.tail_splits, 132 * blocks_per_sm);  // the tail in one wave
        } else {
          EXPECT_EQ(q.tail_splits, q.k_splits);
        }
      }
    }
  }
}

// With the runtime's count of resident clusters per size, a split whose clusters would not all
// fit at once (a second wave) is avoided, for the tiles and for the tail.
TEST(W4A16WgmmaPlan, FollowsTheResidentClustersPerSplit) {
  constexpr double kCost = 16.0;
  // Tiles resident at once, split s = 0 .. 8 ways (2 blocks per SM on 132 SMs; clusters of 7
  // and 8 pack 32 and 30 to a wave).
  const int tiles_per_wave[] = {264, 264, 132, 88, 64, 48, 40, 32, 30};
  // 7B fused qkv at M = 64: 36 tiles, 56 chunks. Without the counts: 7 splits (36 x 7 = 252
  // blocks <= 264); with them, 7 would take two waves: 6.
  EXPECT_EQ(w4a16_wgmma_plan(64, 4608, 3584, 132, 2, kCost).k_splits, 7);
  EXPECT_EQ(w4a16_wgmma_plan(64, 4608, 3584, 132, 2, kCost, tiles_per_wave).k_splits, 6);
  // 7B gate_up at M = 64: 296 tiles; the 32 tail tiles fit as clusters of 7, not of 8.
  const W4A16WgmmaPlan gate_up = w4a16_wgmma_plan(64, 37888, 3584, 132, 2, kCost, tiles_per_wave);
  EXPECT_EQ(gate_up.full_tiles, 264);
  EXPECT_EQ(gate_up.tail_splits, 7);
}

TEST(W4A16GemmWgmma, SplitTailTilesMatchReference) {
  CROSSPOINT_SKIP_WITHOUT_WGMMA();
  // Forced: whole tiles unsplit (or split 2 ways) followed by tail tiles split further, over one
  // and two token tiles; each block finds its tile and K slice from its index alone.
  struct Case {
    int m, n, k, g, splits, tail_tiles, tail_splits;
  };
  const Case cases[] = {{128, 4608, 3584, 128, 1, 5, 7},
                        {300, 320, 1024, 128, 2, 3, 4},
                        {40, 128, 640, 64, 1, 1, 10},
                        {17, 640, 3584, 128, 1, 4, 56}};
  uint32_t seed = 1900;
  for (const auto& c : cases) {
    const LargeProblem p = make_large_problem(seed++, c.m, c.n, c.k, c.g, 8, 1);
    const auto ys = run_large(p, 2, wgmma_split_launch(c.splits, c.tail_tiles, c.tail_splits));
    ASSERT_EQ(ys.size(), 2u);
    const std::string what = describe("kWgmma tail", c.m, c.n, c.k, c.g, p.x_stride, p.y_stride) + " splits " +
                             std::to_string(c.splits) + ", last " + std::to_string(c.tail_tiles) + " tiles " +
                             std::to_string(c.tail_splits);
    expect_close(ys[0], p.ref, what);
    expect_close(ys[1], p.ref, what + " (second launch)");
    EXPECT_EQ(ys[0], ys[1]) << what;
  }
}

TEST(W4A16GemmWgmma, MatchesReferenceOverMNK) {
  CROSSPOINT_SKIP_WITHOUT_WGMMA();
  // Every M x every N (multiples of 64); K rotates over 3584, 192, 64 (3584 only where the
  // double reference stays cheap, M*N*K < 3e8), the group size over 128, 64, -1, the padding
  // of x and y too (odd y strides included).
  const int ms[] = {1, 9, 17, 33, 64, 100, 128, 200, 256, 300};
  const int ns[] = {64, 128, 320, 4608};
  const int groups[] = {128, 64, -1};
  uint32_t seed = 1500;
  int case_idx = 0;
  for (int m : ms) {
    for (int n : ns) {
      const int ks[] = {3584, 192, 64};
      int k = ks[(case_idx + case_idx / 3) % 3];
      if (static_cast<double>(m) * n * k >= 3e8) k = m % 2 == 0 ? 192 : 64;
      const int g = k == 64 && groups[case_idx % 3] == 128 ? 64 : groups[case_idx % 3];
      const int64_t x_pad = (case_idx % 3) * 8, y_pad = case_idx % 4;
      ++case_idx;
      const LargeProblem p = make_large_problem(seed++, m, n, k, g, x_pad, y_pad);
      const auto ys = run_large(p, 1, kernel_launch(W4A16Kernel::kWgmma));
      ASSERT_EQ(ys.size(), 1u);
      expect_close(ys[0], p.ref, describe("kWgmma", m, n, k, g, p.x_stride, p.y_stride));
    }
  }
}

// Both blocks (2 warpgroups, and the wide 4) on both sides of their dispatch boundary, whole
// and split K, N covering part of a wide block.
TEST(W4A16GemmWgmma, BothBlockWidthsMatchReference) {
  CROSSPOINT_SKIP_WITHOUT_WGMMA();
  struct Case {
    int m, n, k, g, splits;
  };
  const Case cases[] = {{40, 320, 1024, 128, 0}, {64, 4608, 640, 64, 0},  {100, 320, 3584, 128, 0},
                        {128, 576, 1024, -1, 3}, {200, 192, 768, 128, 0}, {300, 4608, 256, 64, 0},
                        {65, 128, 3584, 128, 8}};
  uint32_t seed = 2100;
  for (const auto& c : cases) {
    const LargeProblem p = make_large_problem(seed++, c.m, c.n, c.k, c.g, 8, 1);
    for (int warp_groups : {2, kW4A16WgmmaWideWarpGroups}) {
      const auto ys =
          run_large(p, 2,
                    [&](const uint16_t* x, int64_t xs, const uint32_t* w, const uint32_t* s, uint16_t* y, int64_t ys_,
                        int m, int n, int k, int g) {
                      W4A16WgmmaOptions options;
                      options.warp_groups = warp_groups;
                      options.k_splits = c.splits;
                      return w4a16_gemm_wgmma(x, xs, w, s, y, ys_, m, n, k, g == -1 ? k : g, options, nullptr);
                    });
      ASSERT_EQ(ys.size(), 2u);
      const std::string what = describe("kWgmma", c.m, c.n, c.k, c.g, p.x_stride, p.y_stride) + " warp groups " +
                               std::to_string(warp_groups) + " k_splits " + std::to_string(c.splits);
      expect_close(ys[0], p.ref, what);
      EXPECT_EQ(ys[0], ys[1]) << what;
    }
  }
}

TEST(W4A16GemmWgmma, PrefillAndQkvShapes) {
  CROSSPOINT_SKIP_WITHOUT_WGMMA();
  // Prefill-sized M (8 token tiles of 256) on a narrow N, and the 7B fused qkv at M = 100.
  struct Case {
    int m, n, k, g;
  };
  for (const Case& c : {Case{2048, 128, 3584, 128}, Case{100, 4608, 3584, 128}, Case{40, 3584, 3584, -1}}) {
    const LargeProblem p = make_large_problem(1600 + c.m, c.m, c.n, c.k, c.g, 0, 0);
    const auto ys = run_large(p, 1, kernel_launch(W4A16Kernel::kWgmma));
    ASSERT_EQ(ys.size(), 1u);
    expect_close(ys[0], p.ref, describe("kWgmma", c.m, c.n, c.k, c.g, p.x_stride, p.y_stride));
  }
}

TEST(W4A16GemmWgmma, ForcedSplitsMatchReferenceAndRepeatBitwise) {
  CROSSPOINT_SKIP_WITHOUT_WGMMA();
  struct Case {
    int m, n, k, g, splits;
  };
  const Case cases[] = {{17, 64, 3584, 128, 5},  {64, 192, 3584, -1, 13},  {128, 64, 192, 64, 3},
                        {200, 4608, 192, 64, 2}, {256, 320, 3584, 128, 7}, {9, 4608, 3584, 128, 56},
                        {33, 128, 192, 64, 1},   {300, 128, 1024, 128, 4}, {1, 128, 640, 128, 10}};
  uint32_t seed = 1700;
  for (const auto& c : cases) {
    const LargeProblem p = make_large_problem(seed++, c.m, c.n, c.k, c.g, 8, 1);
    const auto ys = run_large(p, 2, wgmma_split_launch(c.splits));
    ASSERT_EQ(ys.size(), 2u);
    const std::string what =
        describe("kWgmma splits", c.m, c.n, c.k, c.g, p.x_stride, p.y_stride) + " k_splits=" + std::to_string(c.splits);
    expect_close(ys[0], p.ref, what);
    expect_close(ys[1], p.ref, what + " (second launch)");
    EXPECT_EQ(ys[0], ys[1]) << what;  // the cluster adds the splits in rank order: bitwise repeat
  }
}

TEST(W4A16GemmWgmma, ActOrderMatchesReference) {
  CROSSPOINT_SKIP_WITHOUT_WGMMA();
  const LargeProblem p = make_large_problem(1800, 72, 192, 768, 128, 0, 0, /*act_order=*/true);
  const auto ys = run_large(p, 1, kernel_launch(W4A16Kernel::kWgmma));
  ASSERT_EQ(ys.size(), 1u);
  expect_close(ys[0], p.ref, "kWgmma act-order m=72 n=192 k=768");
}

TEST(W4A16Gemm, ActOrderMatchesReference) {
  CROSSPOINT_SKIP_WITHOUT_GPU();
  check_w4a16(5, 64, 512, 128, true, 11);
  check_w4a16(40, 144, 768, 128, true, 12);
}

}  // namespace
}  // namespace crosspoint::cuda
