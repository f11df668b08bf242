// W8A8 with the activation quantisation fused into the GEMV (fp8_gemv_from_fp16) against
// the host quantisation reference followed by a double-precision matmul of the e4m3 values;
// its quantised activations bit-exact against the host reference; its output bit-equal to
// fp8_quantize_per_token + fp8_gemv with the same K split; the dispatcher; and the host-side
// split-K plan of the GEMVs (runs without a GPU).
#include <gtest/gtest.h>

#include <memory>

#include "common/dtype.h"
#include "kernels/cuda/cublaslt_gemm.h"
#include "kernels/cuda/cutlass_fp8_gemm.h"
#include "kernels/cuda/fp8_quant.h"
#include "kernels/cuda/gemv.h"
#include "kernels/cuda/linear.h"
#include "kernels_cuda/reference.h"

namespace crosspoint::cuda {
namespace {

using testing::DeviceBuffer;

TEST(GemvPlan, SplitsKUntilTheGpuHasEnoughWarps) {
  // Qwen2.5-7B decode shapes on 132 SMs (target ~3168 warps).
  struct Case {
    bool fp8;
    int n, k, splits;
  };
  for (const Case c : {Case{true, 3584, 3584, 4}, Case{true, 4608, 3584, 4}, Case{true, 37888, 3584, 1},
                       Case{true, 3584, 18944, 4}, Case{false, 3584, 3584, 2}, Case{false, 37888, 3584, 1},
                       Case{false, 3584, 18944, 2}, Case{false, 152064, 3584, 1}, Case{true, 512, 3584, 4},
                       Case{true, 1, 16, 1}, Case{false, 1, 8, 1}, Case{true, 1, 18944, 8}}) {
    const GemvPlan p = plan_gemv(c.fp8, c.n, c.k, 132);
    EXPECT_EQ(p.k_splits, c.splits) << "fp8=" << c.fp8 << " n=" << c.n << " k=" << c.k;
    const int num_chunks = c.k / (c.fp8 ? 16 : 8);
    EXPECT_GE(p.chunks_per_split * p.k_splits, num_chunks);        // the slices cover K
    EXPECT_LT(p.chunks_per_split * (p.k_splits - 1), num_chunks);  // no slice is empty
    if (p.k_splits > 1) {
      EXPECT_GE(p.chunks_per_split, 32);  // every lane loads
    }
    EXPECT_EQ(p.cols_per_block, 8 / p.k_splits * (c.fp8 ? 4 : 2));
    EXPECT_GE(static_cast<int64_t>(p.num_blocks) * p.cols_per_block, c.n);  // the blocks cover N
    EXPECT_LT(static_cast<int64_t>(p.num_blocks - 1) * p.cols_per_block, c.n);
  }
  EXPECT_EQ(plan_gemv(true, 3584, 3584, 132, 1).k_splits, 1);  // forced: the whole-row form
  EXPECT_EQ(plan_gemv(true, 64, 16, 132, 8).chunks_per_split, 1);
}

TEST(GemvPlan, TensorCoreFp8SplitsInWholeSteps) {
  struct Case {
    int n, k, splits;
  };
  for (const Case c : {Case{3584, 3584, 8}, Case{4608, 3584, 8}, Case{37888, 3584, 8}, Case{3584, 18944, 8},
                       Case{512, 3584, 8}, Case{1, 16, 1}, Case{37, 48, 1}, Case{1, 18944, 8}, Case{200, 1040, 4}}) {
    const GemvPlan p = plan_fp8_mma_gemv(c.n, c.k, 132);
    EXPECT_EQ(p.k_splits, c.splits) << "n=" << c.n << " k=" << c.k;
    const int num_steps = (c.k / 16 + 3) / 4;
    EXPECT_EQ(p.chunks_per_split % 4, 0);
    EXPECT_GE(p.chunks_per_split / 4 * p.k_splits, num_steps);        // the slices cover K
    EXPECT_LT(p.chunks_per_split / 4 * (p.k_splits - 1), num_steps);  // no slice is empty
    EXPECT_EQ(p.cols_per_block, 8 / p.k_splits * 16);
    EXPECT_GE(static_cast<int64_t>(p.num_blocks) * p.cols_per_block, c.n);
  }
}

// Random e4m3 codes without NaN, spread over the whole range like quantised weights.
std::vector<uint8_t> random_weight_codes(std::mt19937& rng, size_t count) {
  std::uniform_int_distribution<int> code(0, 0xFD);
  std::vector<uint8_t> out(count);
  for (auto& v : out) {
    const int c = code(rng);
    v = static_cast<uint8_t>((c & 0x7F) == 0x7F ? 0 : c);
  }
  return out;
}

struct FusedProblem {
  int m, n, k;
  std::vector<uint16_t> x;      // [m, k] fp16
  std::vector<uint8_t> wq;      // [n, k] e4m3
  std::vector<float> w_scale;   // [n]
  std::vector<uint8_t> xq_ref;  // [m, k] e4m3, host quantisation
  std::vector<float> xs_ref;    // [m]
  std::vector<double> y_ref;    // [m, n]
};

// x uniform in [-4, 4) with an all-zero row (row 1) and a 60000 outlier (x[0, 0]).
FusedProblem make_problem(std::mt19937& rng, int m, int n, int k) {
  FusedProblem p{m,
                 n,
                 k,
                 testing::random_f16(rng, static_cast<size_t>(m) * k, -4.f, 4.f),
                 random_weight_codes(rng, static_cast<size_t>(n) * k),
                 std::vector<float>(n),
                 {},
                 {},
                 {}};
  if (m > 1) std::fill(p.x.begin() + k, p.x.begin() + 2 * k, 0);
  p.x[0] = crosspoint::f32_to_f16(60000.f);
  std::uniform_real_distribution<float> scale(1e-4f, 1e-3f);
  for (auto& s : p.w_scale) s = scale(rng);
  testing::fp8_quantize_per_token_ref(p.x, m, k, &p.xq_ref, &p.xs_ref);
  std::vector<float> xf(p.xq_ref.size()), wf(p.wq.size());
  for (size_t i = 0; i < xf.size(); ++i) xf[i] = testing::e4m3_to_f32(p.xq_ref[i]);
  for (size_t i = 0; i < wf.size(); ++i) wf[i] = testing::e4m3_to_f32(p.wq[i]);
  p.y_ref = testing::matmul_nt_ref(
      m, n, k, [&](int i, int kk) { return xf[static_cast<size_t>(i) * k + kk]; },
      [&](int j, int kk) { return wf[static_cast<size_t>(j) * k + kk]; });
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j)
      p.y_ref[static_cast<size_t>(i) * n + j] *= static_cast<double>(p.xs_ref[i]) * p.w_scale[j];
  return p;
}

// Runs the fused kernel and quant + fp8_gemv on one problem and checks all four claims.
void check_fused(const FusedProblem& p, GemvOptions options) {
  const int m = p.m, n = p.n, k = p.k;
  const std::string where = "m=" + std::to_string(m) + " n=" + std::to_string(n) + " k=" + std::to_string(k) +
                            " k_splits=" + std::to_string(options.k_splits) +
                            " cuda_cores=" + std::to_string(options.fp8_on_cuda_cores);
  DeviceBuffer<uint16_t> x(p.x), y(static_cast<size_t>(m) * n), y_two_step(static_cast<size_t>(m) * n);
  DeviceBuffer<uint8_t> wq(p.wq), xq_out(static_cast<size_t>(m) * k), xq(static_cast<size_t>(m) * k);
  DeviceBuffer<float> ws(p.w_scale), xs_out(m), xs(m);
  y.poison();
  xq_out.poison(0x7F);
  xs_out.poison();
  Status st = fp8_gemv_from_fp16(x.get(), k, wq.get(), k, ws.get(), y.get(), n, m, n, k, nullptr, xq_out.get(), k,
                                 xs_out.get(), options);
  ASSERT_TRUE(st.is_ok()) << st.to_string() << " " << where;
  const auto y_fused = y.download();
  EXPECT_LT(testing::relative_error_f16(y_fused, p.y_ref), 2e-3) << where;
  EXPECT_EQ(xq_out.download(), p.xq_ref) << where;
  EXPECT_EQ(xs_out.download(), p.xs_ref) << where;
  for (int j = 0; j < n && m > 1; ++j) EXPECT_EQ(y_fused[static_cast<size_t>(n) + j], 0) << "zero row, " << where;

  // The same q values and the same K split: the two-launch path must agree bit for bit.
  if (options.k_splits == 0) return;
  ASSERT_TRUE(fp8_quantize_per_token(x.get(), k, xq.get(), k, xs.get(), m, k, nullptr).is_ok());
  st = fp8_gemv(xq.get(), k, xs.get(), wq.get(), k, ws.get(), y_two_step.get(), n, m, n, k, nullptr, options);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  EXPECT_EQ(y_two_step.download(), y_fused) << where;
}

TEST(Fp8GemvFromFp16, MatchesReferenceOnAwkwardShapes) {
  CROSSPOINT_SKIP_WITHOUT_GPU();
  std::mt19937 rng(41);
  struct Shape {
    int n, k;
    std::vector<int> ms;
  };
  const std::vector<Shape> shapes = {
      {1, 16, {1, 2, 3, 8}}, {37, 48, {1, 2, 3, 4, 5, 8}}, {512, 1008, {1, 2, 4, 7}}, {37, 3584, {1, 2, 3, 8}},
      {4608, 3584, {1, 2}},  {512, 18944, {1, 2}},         {37, 18944, {1, 3, 8}},    {1, 18944, {2}}};
  for (const Shape& s : shapes) {
    for (int m : s.ms) {
      const FusedProblem p = make_problem(rng, m, s.n, s.k);
      for (bool cuda_cores : {false, true}) {
        check_fused(p, GemvOptions{0, cuda_cores});
        if (s.n <= 512 && s.k <= 3584) {
          for (int splits : {1, 2, 8}) check_fused(p, GemvOptions{splits, cuda_cores});
        }
      }
    }
  }
}

TEST(Fp8GemvFromFp16, StridedRowsAndBadArguments) {
  CROSSPOINT_SKIP_WITHOUT_GPU();
  std::mt19937 rng(42);
  const int m = 2, n = 70, k = 1040, x_stride = k + 24, y_stride = n + 5;
  const FusedProblem p = make_problem(rng, m, n, k);
  std::vector<uint16_t> x_padded(static_cast<size_t>(m) * x_stride,
                                 crosspoint::f32_to_f16(1e4f));  // padding must not count
  for (int i = 0; i < m; ++i)
    std::copy(p.x.begin() + i * k, p.x.begin() + (i + 1) * k, x_padded.begin() + i * x_stride);
  DeviceBuffer<uint16_t> x(x_padded), y(static_cast<size_t>(m) * y_stride);
  DeviceBuffer<uint8_t> wq(p.wq);
  DeviceBuffer<float> ws(p.w_scale);
  y.poison();
  ASSERT_TRUE(
      fp8_gemv_from_fp16(x.get(), x_stride, wq.get(), k, ws.get(), y.get(), y_stride, m, n, k, nullptr).is_ok());
  const auto y_padded = y.download();
  std::vector<uint16_t> y_dense;
  for (int i = 0; i < m; ++i)
    y_dense.insert(y_dense.end(), y_padded.begin() + i * y_stride, y_padded.begin() + i * y_stride + n);
  EXPECT_LT(testing::relative_error_f16(y_dense, p.y_ref), 2e-3);

  EXPECT_EQ(fp8_gemv_from_fp16(x.get(), 40, wq.get(), 48, ws.get(), y.get(), 8, 1, 8, 40, nullptr).code(),
            StatusCode::kUnsupported);
  EXPECT_EQ(fp8_gemv_from_fp16(x.get(), 48, wq.get(), 48, ws.get(), y.get(), 8, 9, 8, 48, nullptr).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(fp8_gemv_from_fp16(x.get() + 1, 48, wq.get(), 48, ws.get(), y.get(), 8, 1, 8, 48, nullptr).code(),
            StatusCode::kInvalidArgument);  // x not 16-byte aligned
  EXPECT_EQ(fp8_gemv_from_fp16(x.get(), 48, wq.get(), 48, ws.get(), y.get(), 8, 1, 8, 48, nullptr, nullptr, 0, nullptr,
                               GemvOptions{3, false})
                .code(),
            StatusCode::kInvalidArgument);  // k_splits not a power of two
  EXPECT_EQ(
      fp8_gemv_from_fp16(x.get(), 1 << 17, wq.get(), 1 << 17, ws.get(), y.get(), 8, 8, 8, 1 << 17, nullptr).code(),
      StatusCode::kUnsupported);  // 1 MiB of codes cannot sit in shared memory
}

TEST(Fp8LinearFromFp16, FusedAtSmallMQuantisedAbove) {
  CROSSPOINT_SKIP_WITHOUT_GPU();
  auto ctx = CublasLtContext::create();
  ASSERT_TRUE(ctx.is_ok()) << ctx.status().to_string();
  std::mt19937 rng(43);
  for (int m : {1, 2, 3, 17}) {
    const int n = 96, k = 784;
    const FusedProblem p = make_problem(rng, m, n, k);
    DeviceBuffer<uint16_t> x(p.x), y(static_cast<size_t>(m) * n);
    DeviceBuffer<uint8_t> wq(p.wq), xq(static_cast<size_t>(m) * k);
    DeviceBuffer<float> ws(p.w_scale), xs(m), scratch(static_cast<size_t>(m) * n);
    y.poison();
    xq.poison(0x7F);
    const bool fused = fp8_linear_fuses_quantisation(x.get(), k, k, m, k);
    EXPECT_EQ(fused, m <= kFp8FusedMaxRows && !cutlass_fp8_available()) << "m=" << m;  // CUTLASS wins where it runs
    const Status st = fp8_linear_from_fp16(**ctx, x.get(), k, xq.get(), k, xs.get(), wq.get(), k, ws.get(), y.get(), n,
                                           m, n, k, scratch.get(), nullptr);
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_LT(testing::relative_error_f16(y.download(), p.y_ref), 2e-3) << "m=" << m;
    if (fused) {
      EXPECT_EQ(xq.download(), std::vector<uint8_t>(static_cast<size_t>(m) * k, 0x7F)) << "the fused path writes no xq";
    } else {
      EXPECT_EQ(xq.download(), p.xq_ref) << "m=" << m;
    }
  }
  EXPECT_FALSE(fp8_linear_fuses_quantisation(nullptr, 65536, 65536, 2, 65536));  // too much shared memory
}

}  // namespace
}  // namespace crosspoint::cuda
