// FP8 W8A8: the host e4m3 reference against ml_dtypes (fixture), the per-token
// quantisation kernel bit-exact against that reference, and the fp8 GEMV / cuBLASLt GEMM
// against a double-precision matmul of the same e4m3 values.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <memory>

#include "common/dtype.h"
#include "kernels/cuda/cublaslt_gemm.h"
#include "kernels/cuda/fp8_quant.h"
#include "kernels/cuda/gemv.h"
#include "kernels/cuda/linear.h"
#include "kernels_cuda/reference.h"

namespace crosspoint::cuda {
namespace {

using testing::DeviceBuffer;
using testing::random_e4m3;

TEST(Fp8Reference, MatchesMlDtypesEncodings) {
  std::ifstream in(CROSSPOINT_FIXTURES_DIR "/kernels_cuda/e4m3_rne.txt");
  ASSERT_TRUE(in) << "missing fixture e4m3_rne.txt";
  uint32_t bits = 0, code = 0;
  int checked = 0;
  while (in >> std::hex >> bits >> code) {
    float value;
    std::memcpy(&value, &bits, sizeof value);
    EXPECT_EQ(testing::e4m3_from_f32(value), code) << "value " << value;
    ++checked;
  }
  EXPECT_GT(checked, 900);
}

TEST(Fp8Reference, SaturatesAndRoundTrips) {
  EXPECT_EQ(testing::e4m3_from_f32(1000.f), 0x7E);
  EXPECT_EQ(testing::e4m3_from_f32(-1e30f), 0xFE);
  EXPECT_EQ(testing::e4m3_from_f32(INFINITY), 0x7E);
  for (int code = 0; code < 256; ++code) {
    if ((code & 0x7F) == 0x7F) continue;  // NaN
    EXPECT_EQ(testing::e4m3_from_f32(testing::e4m3_to_f32(static_cast<uint8_t>(code))), code == 0x80 ? 0x80 : code);
  }
}

TEST(Fp8Quantize, BitExactAgainstReference) {
  CROSSPOINT_SKIP_WITHOUT_GPU();
  std::mt19937 rng(3);
  for (auto [m, k] : {std::pair{1, 3584}, {3, 17}, {9, 1000}, {130, 333}}) {
    auto x = testing::random_f16(rng, static_cast<size_t>(m) * k, -4.f, 4.f);
    if (m > 1) std::fill(x.begin() + k, x.begin() + 2 * k, 0);  // an all-zero row takes the scale floor
    x[0] = crosspoint::f32_to_f16(60000.f);                     // a large outlier
    std::vector<uint8_t> q_ref;
    std::vector<float> s_ref;
    testing::fp8_quantize_per_token_ref(x, m, k, &q_ref, &s_ref);
    DeviceBuffer<uint16_t> x_dev(x);
    DeviceBuffer<uint8_t> q(static_cast<size_t>(m) * k);
    DeviceBuffer<float> s(m);
    q.poison(0x7F);
    ASSERT_TRUE(fp8_quantize_per_token(x_dev.get(), k, q.get(), k, s.get(), m, k, nullptr).is_ok());
    EXPECT_EQ(q.download(), q_ref) << "m=" << m << " k=" << k;
    EXPECT_EQ(s.download(), s_ref) << "m=" << m << " k=" << k;
  }
}

// A static activation scale: q = e4m3(x / s) for every row, s written as every row's scale.
TEST(Fp8Quantize, StaticScaleBitExactAgainstReference) {
  CROSSPOINT_SKIP_WITHOUT_GPU();
  std::mt19937 rng(4);
  const int m = 5, k = 333;
  const float static_scale = 0.0137f;
  auto x = testing::random_f16(rng, static_cast<size_t>(m) * k, -4.f, 4.f);
  x[7] = crosspoint::f32_to_f16(60000.f);  // beyond 448 x scale: saturates
  std::vector<uint8_t> q_ref(x.size());
  for (size_t i = 0; i < x.size(); ++i) q_ref[i] = testing::e4m3_from_f32(crosspoint::f16_to_f32(x[i]) / static_scale);
  DeviceBuffer<uint16_t> x_dev(x);
  DeviceBuffer<uint8_t> q(x.size());
  DeviceBuffer<float> s(m), scale_dev(std::vector<float>{static_scale});
  q.poison(0x7F);
  ASSERT_TRUE(fp8_quantize_static(x_dev.get(), k, q.get(), k, s.get(), scale_dev.get(), m, k, nullptr).is_ok());
  EXPECT_EQ(q.download(), q_ref);
  EXPECT_EQ(s.download(), std::vector<float>(m, static_scale));
  EXPECT_EQ(q_ref[7], 0x7E);
}

struct Fp8Problem {
  int m, n, k;
  std::vector<uint8_t> xq, wq;
  std::vector<float> x_scale, w_scale;
  std::vector<double> ref;
};

Fp8Problem make_fp8_problem(std::mt19937& rng, int m, int n, int k) {
  Fp8Problem p{m,  n,  k, random_e4m3(rng, static_cast<size_t>(m) * k), random_e4m3(rng, static_cast<size_t>(n) * k),
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
    for (int j = 0; j < n; ++j)
      p.ref[static_cast<size_t>(i) * n + j] *= static_cast<double>(p.x_scale[i]) * p.w_scale[j];
  return p;
}

// Both kernels (tensor cores where the GPU has e4m3 MMA, CUDA cores) and every K split
// (0: the planned one) on awkward shapes, N = 1 and K = 16 included.
TEST(Fp8Gemv, MatchesReferenceForEveryKernelAndKSplit) {
  CROSSPOINT_SKIP_WITHOUT_GPU();
  std::mt19937 rng(5);
  for (int m : {1, 2, 3, 5, 8}) {
    for (auto [n, k] : {std::pair{1, 16}, {37, 16}, {37, 48}, {200, 1040}, {1, 3584}, {512, 3584}, {70, 18944}}) {
      const auto p = make_fp8_problem(rng, m, n, k);
      DeviceBuffer<uint8_t> xq(p.xq), wq(p.wq);
      DeviceBuffer<float> xs(p.x_scale), ws(p.w_scale);
      DeviceBuffer<uint16_t> y(static_cast<size_t>(m) * n);
      for (bool cuda_cores : {false, true}) {
        for (int splits : {0, 1, 2, 4, 8}) {
          y.poison();
          const Status st = fp8_gemv(xq.get(), k, xs.get(), wq.get(), k, ws.get(), y.get(), n, m, n, k, nullptr,
                                     GemvOptions{splits, cuda_cores});
          ASSERT_TRUE(st.is_ok()) << st.to_string();
          EXPECT_LT(testing::relative_error_f16(y.download(), p.ref), 2e-3)
              << "m=" << m << " n=" << n << " k=" << k << " k_splits=" << splits << " cuda_cores=" << cuda_cores;
        }
      }
    }
  }
  EXPECT_EQ(fp8_gemv(nullptr, 40, nullptr, nullptr, 40, nullptr, nullptr, 8, 1, 8, 40, nullptr).code(),
            StatusCode::kUnsupported);
  // Past every kernel's row limit (m = 9..16 is valid on tensor cores: test_fp8_gemv.cc).
  EXPECT_EQ(
      fp8_gemv(nullptr, 48, nullptr, nullptr, 48, nullptr, nullptr, 8, kMmaGemvMaxRows + 1, 8, 48, nullptr).code(),
      StatusCode::kInvalidArgument);
}

TEST(Fp8GemmCublasLt, MatchesReferenceOnEitherScalePath) {
  CROSSPOINT_SKIP_WITHOUT_GPU();
  auto ctx = CublasLtContext::create();
  ASSERT_TRUE(ctx.is_ok()) << ctx.status().to_string();
  std::mt19937 rng(6);
  for (int m : {1, 3, 8, 17, 64, 130}) {
    for (auto [n, k] : {std::pair{272, 336}, {64, 1040}}) {
      const auto p = make_fp8_problem(rng, m, n, k);
      DeviceBuffer<uint8_t> xq(p.xq), wq(p.wq);
      DeviceBuffer<float> xs(p.x_scale), ws(p.w_scale), scratch(fp8_gemm_scratch_bytes(m, n) / 4);
      DeviceBuffer<uint16_t> y(static_cast<size_t>(m) * n);
      y.poison();
      auto path = fp8_scale_path(**ctx, m, n, k, k, k, n);
      ASSERT_TRUE(path.is_ok());
      std::printf("fp8 cuBLASLt m=%d n=%d k=%d scale path: %s\n", m, n, k,
                  *path == Fp8ScalePath::kOuterVector ? "outer-vector" : "epilogue");
      const Status st = fp8_gemm_cublaslt(**ctx, xq.get(), k, xs.get(), wq.get(), k, ws.get(), y.get(), n, m, n, k,
                                          scratch.get(), nullptr);
      ASSERT_TRUE(st.is_ok()) << st.to_string();
      EXPECT_LT(testing::relative_error_f16(y.download(), p.ref), 2e-3) << "m=" << m << " n=" << n << " k=" << k;
    }
  }
}

TEST(Fp8Linear, QuantiseThenDispatchMatchesReference) {
  CROSSPOINT_SKIP_WITHOUT_GPU();
  auto ctx = CublasLtContext::create();
  ASSERT_TRUE(ctx.is_ok());
  std::mt19937 rng(7);
  for (int m : {1, 2, 3, 33}) {
    const int n = 80, k = 784;
    // fp16 activations -> per-token e4m3 on the device, then the GEMM the dispatcher picks;
    // the reference quantises on the host (bit-exact, tested above) and multiplies in double.
    const auto x = testing::random_f16(rng, static_cast<size_t>(m) * k, -2.f, 2.f);
    const auto wq = random_e4m3(rng, static_cast<size_t>(n) * k);
    std::vector<float> w_scale(n);
    for (auto& s : w_scale) s = 1e-3f;
    std::vector<uint8_t> xq_ref;
    std::vector<float> xs_ref;
    testing::fp8_quantize_per_token_ref(x, m, k, &xq_ref, &xs_ref);
    auto ref = testing::matmul_nt_ref(
        m, n, k, [&](int i, int kk) { return testing::e4m3_to_f32(xq_ref[static_cast<size_t>(i) * k + kk]); },
        [&](int j, int kk) { return testing::e4m3_to_f32(wq[static_cast<size_t>(j) * k + kk]); });
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < n; ++j) ref[static_cast<size_t>(i) * n + j] *= static_cast<double>(xs_ref[i]) * w_scale[j];
    DeviceBuffer<uint16_t> x_dev(x), y(static_cast<size_t>(m) * n);
    DeviceBuffer<uint8_t> xq(static_cast<size_t>(m) * k), wq_dev(wq);
    DeviceBuffer<float> xs(m), ws(w_scale), scratch(static_cast<size_t>(m) * n);
    y.poison();
    ASSERT_TRUE(fp8_quantize_per_token(x_dev.get(), k, xq.get(), k, xs.get(), m, k, nullptr).is_ok());
    const Status st = fp8_linear(**ctx, xq.get(), k, xs.get(), wq_dev.get(), k, ws.get(), y.get(), n, m, n, k,
                                 scratch.get(), nullptr);
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_LT(testing::relative_error_f16(y.download(), ref), 2e-3) << "m=" << m;
  }
}

}  // namespace
}  // namespace crosspoint::cuda
