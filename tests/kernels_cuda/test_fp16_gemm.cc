// FP16 GEMMs: the hand GEMV and the cuBLASLt path against a double-precision matmul.
#include <gtest/gtest.h>

#include "kernels/cuda/cublaslt_gemm.h"
#include "kernels/cuda/gemv.h"
#include "kernels/cuda/linear.h"
#include "kernels_cuda/reference.h"

namespace crosspoint::cuda {
namespace {

using testing::DeviceBuffer;

std::vector<double> fp16_ref(const std::vector<uint16_t>& x, const std::vector<uint16_t>& w, int m, int n, int k) {
  const auto xf = testing::f16_to_f32(x), wf = testing::f16_to_f32(w);
  return testing::matmul_nt_ref(
      m, n, k, [&](int i, int kk) { return xf[static_cast<size_t>(i) * k + kk]; },
      [&](int j, int kk) { return wf[static_cast<size_t>(j) * k + kk]; });
}

// Every K split (0: the planned one) on awkward shapes, N = 1 and K = 8 / 16 included.
TEST(Fp16Gemv, MatchesReferenceForEveryKSplit) {
  CROSSPOINT_SKIP_WITHOUT_GPU();
  std::mt19937 rng(21);
  for (int m : {1, 2, 3, 5, 8}) {
    for (auto [n, k] :
         {std::pair{1, 8}, {1, 16}, {37, 16}, {37, 360}, {200, 1000}, {1, 3584}, {512, 3584}, {70, 18944}}) {
      const auto x = testing::random_f16(rng, static_cast<size_t>(m) * k, -1.f, 1.f);
      const auto w = testing::random_f16(rng, static_cast<size_t>(n) * k, -0.05f, 0.05f);
      const auto ref = fp16_ref(x, w, m, n, k);
      DeviceBuffer<uint16_t> x_dev(x), w_dev(w), y(static_cast<size_t>(m) * n);
      for (int splits : {0, 1, 2, 4, 8}) {
        y.poison();
        const Status st = fp16_gemv(x_dev.get(), k, w_dev.get(), k, y.get(), n, m, n, k, nullptr, splits);
        ASSERT_TRUE(st.is_ok()) << st.to_string();
        EXPECT_LT(testing::relative_error_f16(y.download(), ref), 2e-3)
            << "m=" << m << " n=" << n << " k=" << k << " k_splits=" << splits;
      }
    }
  }
  EXPECT_EQ(fp16_gemv(nullptr, 12, nullptr, 12, nullptr, 4, 1, 4, 12, nullptr).code(), StatusCode::kUnsupported);
  EXPECT_EQ(fp16_gemv(nullptr, 16, nullptr, 16, nullptr, 4, 1, 4, 16, nullptr, 3).code(), StatusCode::kInvalidArgument);
}

TEST(Fp16Gemv, StridedRows) {
  CROSSPOINT_SKIP_WITHOUT_GPU();
  std::mt19937 rng(24);
  const int m = 1, n = 45, k = 1000, x_stride = 1016, w_stride = 1008, y_stride = 50;
  const auto x = testing::random_f16(rng, static_cast<size_t>(m) * x_stride, -1.f, 1.f);
  const auto w = testing::random_f16(rng, static_cast<size_t>(n) * w_stride, -0.05f, 0.05f);
  const auto xf = testing::f16_to_f32(x), wf = testing::f16_to_f32(w);
  const auto ref = testing::matmul_nt_ref(
      m, n, k, [&](int i, int kk) { return xf[static_cast<size_t>(i) * x_stride + kk]; },
      [&](int j, int kk) { return wf[static_cast<size_t>(j) * w_stride + kk]; });
  DeviceBuffer<uint16_t> x_dev(x), w_dev(w), y(static_cast<size_t>(m) * y_stride);
  y.poison();
  ASSERT_TRUE(fp16_gemv(x_dev.get(), x_stride, w_dev.get(), w_stride, y.get(), y_stride, m, n, k, nullptr).is_ok());
  const auto y_padded = y.download();
  EXPECT_LT(testing::relative_error_f16(std::vector<uint16_t>(y_padded.begin(), y_padded.begin() + n), ref), 2e-3);
}

TEST(Fp16GemmCublasLt, MatchesReference) {
  CROSSPOINT_SKIP_WITHOUT_GPU();
  auto ctx = CublasLtContext::create();
  ASSERT_TRUE(ctx.is_ok()) << ctx.status().to_string();
  std::mt19937 rng(22);
  for (int m : {1, 7, 64, 129}) {
    for (auto [n, k] : {std::pair{200, 360}, {72, 1000}}) {
      const auto x = testing::random_f16(rng, static_cast<size_t>(m) * k, -1.f, 1.f);
      const auto w = testing::random_f16(rng, static_cast<size_t>(n) * k, -0.05f, 0.05f);
      DeviceBuffer<uint16_t> x_dev(x), w_dev(w), y(static_cast<size_t>(m) * n);
      y.poison();
      const Status st = fp16_gemm_cublaslt(**ctx, x_dev.get(), k, w_dev.get(), k, y.get(), n, m, n, k, nullptr);
      ASSERT_TRUE(st.is_ok()) << st.to_string();
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      EXPECT_LT(testing::relative_error_f16(y.download(), fp16_ref(x, w, m, n, k)), 2e-3)
          << "m=" << m << " n=" << n << " k=" << k;
    }
  }
}

TEST(Fp16Linear, DispatchMatchesReference) {
  CROSSPOINT_SKIP_WITHOUT_GPU();
  auto ctx = CublasLtContext::create();
  ASSERT_TRUE(ctx.is_ok());
  std::mt19937 rng(23);
  for (int m : {1, 2, 5}) {
    const int n = 96, k = 520;
    const auto x = testing::random_f16(rng, static_cast<size_t>(m) * k, -1.f, 1.f);
    const auto w = testing::random_f16(rng, static_cast<size_t>(n) * k, -0.05f, 0.05f);
    DeviceBuffer<uint16_t> x_dev(x), w_dev(w), y(static_cast<size_t>(m) * n);
    y.poison();
    ASSERT_TRUE(fp16_linear(**ctx, x_dev.get(), k, w_dev.get(), k, y.get(), n, m, n, k, nullptr).is_ok());
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_LT(testing::relative_error_f16(y.download(), fp16_ref(x, w, m, n, k)), 2e-3) << "m=" << m;
  }
}

}  // namespace
}  // namespace crosspoint::cuda
