// The tensor-core GEMV at 1..kMmaGemvMaxRows rows (a second token tile of 8 above m = 8):
// fp8_gemv against double-precision references on awkward shapes with strided inputs and
// NaN-poisoned, strided outputs; forced K splits; the second tile computing exactly what the
// first would (bitwise); and the dispatchers (fp8_linear, fp8_linear_from_fp16, fp16_linear)
// taking the kernels linear.h names, bit for bit.
// The planning and argument checks run without a GPU.
#include <gtest/gtest.h>

#include <cstdio>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/cuda/cublaslt_gemm.h"
#include "kernels/cuda/cutlass_fp8_gemm.h"
#include "kernels/cuda/device_info.h"
#include "kernels/cuda/fp8_quant.h"
#include "kernels/cuda/gemv.h"
#include "kernels/cuda/linear.h"
#include "kernels_cuda/reference.h"

namespace crosspoint::cuda {
namespace {

using testing::DeviceBuffer;
using testing::random_e4m3;

constexpr double kTolerance = 2e-3;  // fp32 accumulation, one fp16 rounding (as test_fp8 / test_fp16_gemm)

// One GEMV problem: x [m, x_stride], w [n, w_stride] (fp16 elements or e4m3 bytes), y written
// into [m, y_stride] with y_stride > n so the padding shows stray writes.
struct Problem {
  int m = 0, n = 0, k = 0;
  int64_t x_stride = 0, w_stride = 0, y_stride = 0;
  std::vector<uint16_t> x16, w16;  // fp16 problems
  std::vector<uint8_t> xq, wq;     // fp8 problems
  std::vector<float> x_scale, w_scale;
  std::vector<double> ref;  // [m, n]
};

Problem make_fp16_problem(uint32_t seed, int m, int n, int k) {
  std::mt19937 rng(seed);
  Problem p;
  p.m = m, p.n = n, p.k = k;
  p.x_stride = k + 24, p.w_stride = k + 8, p.y_stride = n + 3;
  p.x16 = testing::random_f16(rng, static_cast<size_t>(m) * p.x_stride, -1.f, 1.f);
  p.w16 = testing::random_f16(rng, static_cast<size_t>(n) * p.w_stride, -0.05f, 0.05f);
  const auto xf = testing::f16_to_f32(p.x16), wf = testing::f16_to_f32(p.w16);
  p.ref = testing::matmul_nt_ref(
      m, n, k, [&](int i, int kk) { return xf[i * p.x_stride + kk]; },
      [&](int j, int kk) { return wf[j * p.w_stride + kk]; });
  return p;
}

Problem make_fp8_problem(uint32_t seed, int m, int n, int k) {
  std::mt19937 rng(seed);
  Problem p;
  p.m = m, p.n = n, p.k = k;
  p.x_stride = k + 32, p.w_stride = k + 16, p.y_stride = n + 5;
  p.xq = random_e4m3(rng, static_cast<size_t>(m) * p.x_stride);
  p.wq = random_e4m3(rng, static_cast<size_t>(n) * p.w_stride);
  std::uniform_real_distribution<float> scale(1e-4f, 1e-3f);
  p.x_scale.resize(m);
  p.w_scale.resize(n);
  for (auto& s : p.x_scale) s = scale(rng);
  for (auto& s : p.w_scale) s = scale(rng);
  // Decoded once: the reference reads every weight m times.
  std::vector<float> xf(p.xq.size()), wf(p.wq.size());
  for (size_t i = 0; i < xf.size(); ++i) xf[i] = testing::e4m3_to_f32(p.xq[i]);
  for (size_t i = 0; i < wf.size(); ++i) wf[i] = testing::e4m3_to_f32(p.wq[i]);
  p.ref = testing::matmul_nt_ref(
      m, n, k, [&](int i, int kk) { return xf[i * p.x_stride + kk]; },
      [&](int j, int kk) { return wf[j * p.w_stride + kk]; });
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j)
      p.ref[static_cast<size_t>(i) * n + j] *= static_cast<double>(p.x_scale[i]) * p.w_scale[j];
  return p;
}

// Device copies of a problem and a NaN-poisoned output.
struct DeviceProblem {
  explicit DeviceProblem(const Problem& p)
      : x16(p.x16),
        w16(p.w16),
        xq(p.xq),
        wq(p.wq),
        x_scale(p.x_scale),
        w_scale(p.w_scale),
        y(static_cast<size_t>(p.m) * p.y_stride) {
    y.poison();
  }
  DeviceBuffer<uint16_t> x16, w16;
  DeviceBuffer<uint8_t> xq, wq;
  DeviceBuffer<float> x_scale, w_scale;
  DeviceBuffer<uint16_t> y;
};

// The [m, n] results out of y [m, y_stride]; every padding element must still be the poison.
std::vector<uint16_t> unpad(const Problem& p, const std::vector<uint16_t>& y, const std::string& what) {
  std::vector<uint16_t> out;
  int stray = 0;
  for (int i = 0; i < p.m; ++i) {
    for (int64_t col = 0; col < p.y_stride; ++col) {
      if (col < p.n) out.push_back(y[i * p.y_stride + col]);
      else if (y[i * p.y_stride + col] != 0xFFFF) ++stray;
    }
  }
  EXPECT_EQ(stray, 0) << what << ": padding of y written";
  return out;
}

std::string describe(const char* op, const Problem& p, int k_splits) {
  return std::string(op) + " m=" + std::to_string(p.m) + " n=" + std::to_string(p.n) + " k=" + std::to_string(p.k) +
         " k_splits=" + std::to_string(k_splits);
}

std::vector<uint16_t> run_fp8(const Problem& p, DeviceProblem& d, int k_splits) {
  d.y.poison();
  const Status st = fp8_gemv(d.xq.get(), p.x_stride, d.x_scale.get(), d.wq.get(), p.w_stride, d.w_scale.get(),
                             d.y.get(), p.y_stride, p.m, p.n, p.k, nullptr, GemvOptions{k_splits, false});
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  return unpad(p, d.y.download(), describe("fp8_gemv", p, k_splits));
}

struct Shape {
  int n, k;
};

// ---- host only -----------------------------------------------------------------------

TEST(MmaGemvPlan, SlicesCoverKInWholeSteps) {
  for (int sms : {1, 78, 132}) {
    for (Shape s : {Shape{16, 128}, {48, 2000}, {272, 7168}, {4608, 7168}, {3584, 37888}, {37888, 7168}, {1, 16}}) {
      const GemvPlan p = plan_fp8_mma_gemv(s.n, s.k, sms);
      EXPECT_EQ(p.cols_per_warp, 16);
      EXPECT_EQ(p.chunks_per_split % 4, 0);                  // whole 64-byte steps
      EXPECT_GE(p.k_splits * p.chunks_per_split, s.k / 16);  // the slices cover K
      EXPECT_GE(static_cast<int64_t>(p.num_blocks) * p.cols_per_block, s.n);
    }
  }
  EXPECT_EQ(plan_fp8_mma_gemv(3584, 37888, 132, 2).k_splits, 2);  // forced
  // The dispatch limit stays within the kernel's.
  EXPECT_LE(kFp8GemvMaxRows, kMmaGemvMaxRows);
}

// The second token tile runs the first tile's arithmetic on rows 8..15: an m = 8 + r problem
// gives, bit for bit, the m = 8 result on its first rows and the m = r result on the others.
template <typename Run>
void expect_tiles_independent(const Problem& full, Run run, const char* op) {
  ASSERT_GT(full.m, 8);
  auto rows = [&](int begin, int count) {
    Problem p = full;
    p.m = count;
    if (!full.x16.empty())
      p.x16.assign(full.x16.begin() + begin * full.x_stride, full.x16.begin() + (begin + count) * full.x_stride);
    if (!full.xq.empty()) {
      p.xq.assign(full.xq.begin() + begin * full.x_stride, full.xq.begin() + (begin + count) * full.x_stride);
      p.x_scale.assign(full.x_scale.begin() + begin, full.x_scale.begin() + begin + count);
    }
    p.ref.assign(full.ref.begin() + static_cast<size_t>(begin) * full.n,
                 full.ref.begin() + static_cast<size_t>(begin + count) * full.n);
    return p;
  };
  const Problem low = rows(0, 8), high = rows(8, full.m - 8);
  DeviceProblem d_full(full), d_low(low), d_high(high);
  const std::vector<uint16_t> y_full = run(full, d_full), y_low = run(low, d_low), y_high = run(high, d_high);
  std::vector<uint16_t> joined = y_low;
  joined.insert(joined.end(), y_high.begin(), y_high.end());
  EXPECT_EQ(y_full, joined) << op << " m=" << full.m << " n=" << full.n << " k=" << full.k;
}

TEST(Fp16Linear, DispatchesAsLinearHSays) {
  CROSSPOINT_SKIP_WITHOUT_GPU();
  auto ctx = CublasLtContext::create();
  ASSERT_TRUE(ctx.is_ok()) << ctx.status().to_string();
  std::printf("fp16_linear: fp16_gemv at m <= %d, cuBLASLt above\n", kFp16GemvMaxRows);
  for (int m = 1; m <= kMmaGemvMaxRows; ++m) {
    const Problem p = make_fp16_problem(1200 + m, m, 272, 1000);
    DeviceProblem d(p);
    const Status st = fp16_linear(**ctx, d.x16.get(), p.x_stride, d.w16.get(), p.w_stride, d.y.get(), p.y_stride, m,
                                  p.n, p.k, nullptr);
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const std::vector<uint16_t> y = unpad(p, d.y.download(), "fp16_linear m=" + std::to_string(m));
    EXPECT_LT(testing::relative_error_f16(y, p.ref), kTolerance) << "fp16_linear m=" << m;
  }
}

// ---- fp8 on tensor cores ----------------------------------------------------------------

#define SKIP_WITHOUT_FP8_MMA()   \
  CROSSPOINT_SKIP_WITHOUT_GPU(); \
  if (!fp8_gemv_on_tensor_cores()) GTEST_SKIP() << "no e4m3 tensor cores on this GPU"

TEST(Fp8MmaGemv, MatchesReferenceAtEveryRowCount) {
  SKIP_WITHOUT_FP8_MMA();
  // K = 16: a quarter step; K = 1040: 65 chunks (a partial last step).
  const Shape shapes[] = {{16, 16}, {16, 64}, {48, 1040}, {272, 3584}, {16, 18944}};
  uint32_t seed = 2000;
  for (int m = 1; m <= kMmaGemvMaxRows; ++m) {
    for (const Shape& s : shapes) {
      const Problem p = make_fp8_problem(seed++, m, s.n, s.k);
      DeviceProblem d(p);
      for (int splits : {0, 1, 8}) {
        EXPECT_LT(testing::relative_error_f16(run_fp8(p, d, splits), p.ref), kTolerance)
            << describe("fp8_gemv", p, splits);
      }
    }
  }
  for (int m : {1, 8, 9, 16}) {  // the 7B qkv shape
    const Problem p = make_fp8_problem(seed++, m, 4608, 3584);
    DeviceProblem d(p);
    EXPECT_LT(testing::relative_error_f16(run_fp8(p, d, 0), p.ref), kTolerance) << describe("fp8_gemv", p, 0);
  }
}

TEST(Fp8MmaGemv, SecondTokenTileEqualsTheFirstBitwise) {
  SKIP_WITHOUT_FP8_MMA();
  for (auto [m, n, k] : {std::tuple{9, 48, 1040}, {12, 272, 3584}, {16, 4608, 3584}}) {
    expect_tiles_independent(
        make_fp8_problem(2100 + m, m, n, k), [](const Problem& p, DeviceProblem& d) { return run_fp8(p, d, 0); },
        "fp8_gemv");
  }
}

// Where fp8_linear's rows go: CUTLASS's GEMM up to kFp8CutlassMaxRows on Hopper, else the
// tensor-core GEMV up to its row limit (bitwise the kernel it names).
TEST(Fp8Linear, TakesCutlassOnHopperElseTheTensorCoreGemvUpToItsRowLimit) {
  SKIP_WITHOUT_FP8_MMA();
  auto ctx = CublasLtContext::create();
  ASSERT_TRUE(ctx.is_ok()) << ctx.status().to_string();
  ASSERT_EQ(fp8_gemv_max_rows(), kFp8GemvMaxRows);
  for (int m = 1; m <= kMmaGemvMaxRows; ++m) {
    const Problem p = make_fp8_problem(2200 + m, m, 272, 1040);
    DeviceProblem d(p);
    DeviceBuffer<float> scratch(fp8_gemm_scratch_bytes(m, p.n) / 4 + 1);
    const Status st = fp8_linear(**ctx, d.xq.get(), p.x_stride, d.x_scale.get(), d.wq.get(), p.w_stride,
                                 d.w_scale.get(), d.y.get(), p.y_stride, m, p.n, p.k, scratch.get(), nullptr);
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const std::vector<uint16_t> y = unpad(p, d.y.download(), "fp8_linear m=" + std::to_string(m));
    EXPECT_LT(testing::relative_error_f16(y, p.ref), kTolerance) << "fp8_linear m=" << m;
    const std::optional<CutlassFp8Tile> tile =
        cutlass_fp8_available() ? cutlass_fp8_tile_for(m, p.n, cuda_device_info().num_sms) : std::nullopt;
    if (tile && cutlass_fp8_gemm_check(*tile, m, p.n, p.k, p.x_stride, p.w_stride, p.y_stride).is_ok()) {
      ASSERT_TRUE(cutlass_fp8_gemm(*tile, d.xq.get(), p.x_stride, d.x_scale.get(), d.wq.get(), p.w_stride,
                                   d.w_scale.get(), d.y.get(), p.y_stride, m, p.n, p.k, nullptr)
                      .is_ok());
      EXPECT_EQ(y, unpad(p, d.y.download(), "cutlass m=" + std::to_string(m)))
          << "fp8_linear is not CUTLASS at m=" << m;
    } else if (m <= kFp8GemvMaxRows) {
      EXPECT_EQ(y, run_fp8(p, d, 0)) << "fp8_linear is not fp8_gemv at m=" << m;
    }
  }
}

// From fp16 activations above the fused rows: the per-token quantisation, then what fp8_linear
// takes (bitwise).
TEST(Fp8Linear, FromFp16AboveTheFusedRowsQuantisesThenDispatches) {
  SKIP_WITHOUT_FP8_MMA();
  auto ctx = CublasLtContext::create();
  ASSERT_TRUE(ctx.is_ok()) << ctx.status().to_string();
  const int n = 272, k = 3584;
  for (int m : {3, 9, 12, 16}) {
    std::mt19937 rng(2300 + m);
    const auto x = testing::random_f16(rng, static_cast<size_t>(m) * k, -2.f, 2.f);
    const auto wq = random_e4m3(rng, static_cast<size_t>(n) * k);
    const std::vector<float> w_scale(n, 1e-3f);
    DeviceBuffer<uint16_t> x_dev(x), y(static_cast<size_t>(m) * n), y_direct(static_cast<size_t>(m) * n);
    DeviceBuffer<uint8_t> wq_dev(wq), xq(static_cast<size_t>(m) * k), xq_direct(static_cast<size_t>(m) * k);
    DeviceBuffer<float> ws(w_scale), xs(m), xs_direct(m), scratch(fp8_gemm_scratch_bytes(m, n) / 4 + 1);
    y.poison();
    y_direct.poison();
    ASSERT_FALSE(fp8_linear_fuses_quantisation(x_dev.get(), k, k, m, k)) << "m=" << m;
    Status st = fp8_linear_from_fp16(**ctx, x_dev.get(), k, xq.get(), k, xs.get(), wq_dev.get(), k, ws.get(), y.get(),
                                     n, m, n, k, scratch.get(), nullptr);
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    ASSERT_TRUE(fp8_quantize_per_token(x_dev.get(), k, xq_direct.get(), k, xs_direct.get(), m, k, nullptr).is_ok());
    st = fp8_linear(**ctx, xq_direct.get(), k, xs_direct.get(), wq_dev.get(), k, ws.get(), y_direct.get(), n, m, n, k,
                    scratch.get(), nullptr);
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const std::vector<uint16_t> got = y.download();
    EXPECT_EQ(got, y_direct.download()) << "m=" << m;
    for (uint16_t v : got) ASSERT_NE(v & 0x7C00, 0x7C00) << "inf/NaN in the output at m=" << m;
  }
}

}  // namespace
}  // namespace crosspoint::cuda
