// W8A8-INT8 on the GPU against the host reference of kernels/int8.h (the CPU model's kernel):
// the activation quantisation bit for bit, and the whole linear (quantisation, CUTLASS's or
// cuBLASLt's int8 GEMM, the scale epilogue) bit for bit after the reference's f32 output is
// rounded to fp16: the sums are exact integers and both epilogues multiply in the reference's order.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <random>
#include <vector>

#include "common/dtype.h"
#include "kernels/cuda/cublaslt_gemm.h"
#include "kernels/cuda/cutlass_fp8_gemm.h"
#include "kernels/cuda/int8_quant.h"
#include "kernels/cuda/linear.h"
#include "kernels/int8.h"
#include "kernels_cuda/reference.h"

namespace crosspoint::cuda {
namespace {

using testing::DeviceBuffer;

// The host reference's quantisation of fp16 activations (as f32, which it rounds to fp16: a no-op).
void quantize_ref(const std::vector<uint16_t>& x, int m, int k, float input_scale, std::vector<int8_t>* q,
                  std::vector<float>* scale) {
  const std::vector<float> xf = testing::f16_to_f32(x);
  Int8LinearArgs args;
  args.x = xf.data();
  args.num_rows = m;
  args.in_features = k;
  args.out_features = 1;
  args.input_scale = input_scale;
  q->assign(static_cast<size_t>(m) * k, 0);
  scale->assign(m, 0.f);
  ASSERT_TRUE(int8_quantize_activations_ref(args, q->data(), scale->data()).is_ok());
}

std::vector<uint16_t> awkward_activations(std::mt19937& rng, int m, int k) {
  auto x = testing::random_f16(rng, static_cast<size_t>(m) * k, -4.f, 4.f);
  if (m > 1) std::fill(x.begin() + k, x.begin() + 2 * k, 0);  // an all-zero row: scale 0, codes 0
  x[0] = f32_to_f16(60000.f);                                 // a large outlier
  if (k > 3) {
    x[1] = 0x7E00;  // NaN: skipped by amax, code 0
    x[2] = 0x7C00;  // +inf: saturates to 65504 as the reference's fp16 clamp does
  }
  return x;
}

TEST(Int8Quantize, PerTokenBitExactAgainstTheHostReference) {
  CROSSPOINT_SKIP_WITHOUT_GPU();
  std::mt19937 rng(21);
  // Rows held in registers (k % 8 == 0, to 20,480 values) and read twice (the others).
  for (auto [m, k] : {std::pair{1, 3584}, {3, 17}, {9, 1000}, {130, 333}, {2, 18944}, {2, 20488}}) {
    const auto x = awkward_activations(rng, m, k);
    std::vector<int8_t> q_ref;
    std::vector<float> s_ref;
    quantize_ref(x, m, k, 0.f, &q_ref, &s_ref);
    DeviceBuffer<uint16_t> x_dev(x);
    DeviceBuffer<int8_t> q(static_cast<size_t>(m) * k);
    DeviceBuffer<float> s(m);
    q.poison(0x55);
    ASSERT_TRUE(int8_quantize_per_token(x_dev.get(), k, q.get(), k, s.get(), m, k, nullptr).is_ok());
    EXPECT_EQ(q.download(), q_ref) << "m=" << m << " k=" << k;
    EXPECT_EQ(s.download(), s_ref) << "m=" << m << " k=" << k;
  }
}

TEST(Int8Quantize, StaticScaleBitExactAgainstTheHostReference) {
  CROSSPOINT_SKIP_WITHOUT_GPU();
  std::mt19937 rng(22);
  const int m = 5, k = 333;
  const float static_scale = 0.0137f;
  const auto x = awkward_activations(rng, m, k);
  std::vector<int8_t> q_ref;
  std::vector<float> s_ref;
  quantize_ref(x, m, k, static_scale, &q_ref, &s_ref);
  DeviceBuffer<uint16_t> x_dev(x);
  DeviceBuffer<int8_t> q(x.size());
  DeviceBuffer<float> s(m), scale_dev(std::vector<float>{static_scale});
  q.poison(0x55);
  ASSERT_TRUE(int8_quantize_static(x_dev.get(), k, q.get(), k, s.get(), scale_dev.get(), m, k, nullptr).is_ok());
  EXPECT_EQ(q.download(), q_ref);
  EXPECT_EQ(s.download(), std::vector<float>(m, static_scale));
  EXPECT_EQ(q_ref[0], 127);  // the outlier saturates
}

// One decode row, a few rows, a batch-invariant slab, a prefill; per-token and static scales.
TEST(Int8Linear, EqualsTheHostReferenceRoundedToFp16) {
  CROSSPOINT_SKIP_WITHOUT_GPU();
  auto ctx = CublasLtContext::create();
  ASSERT_TRUE(ctx.is_ok()) << ctx.status().to_string();
  std::mt19937 rng(23);
  std::uniform_int_distribution<int> code(-127, 127);
  std::uniform_real_distribution<float> scale(1e-4f, 2e-3f);
  for (auto [m, n, k] : {std::tuple{1, 64, 128}, {3, 132, 96}, {64, 512, 3584}, {300, 256, 1028}}) {
    for (float input_scale : {0.f, 0.03f}) {
      const auto x = testing::random_f16(rng, static_cast<size_t>(m) * k, -3.f, 3.f);
      std::vector<int8_t> w(static_cast<size_t>(n) * k);
      for (auto& v : w) v = static_cast<int8_t>(code(rng));
      std::vector<float> w_scale(n);
      for (auto& s : w_scale) s = scale(rng);
      const std::vector<float> xf = testing::f16_to_f32(x);
      std::vector<float> y_ref(static_cast<size_t>(m) * n);
      Int8LinearArgs args;
      args.x = xf.data();
      args.weight = w.data();
      args.weight_scale = w_scale.data();
      args.y = y_ref.data();
      args.num_rows = m;
      args.in_features = k;
      args.out_features = n;
      args.input_scale = input_scale;
      ASSERT_TRUE(int8_linear_ref(args).is_ok());

      DeviceBuffer<uint16_t> x_dev(x), y(static_cast<size_t>(m) * n);
      DeviceBuffer<int8_t> w_dev(w), xq(static_cast<size_t>(m) * k);
      DeviceBuffer<float> ws(w_scale), xs(m), static_dev(std::vector<float>{input_scale});
      DeviceBuffer<int32_t> sums(static_cast<size_t>(m) * n);
      y.poison();
      const Status st = int8_linear_from_fp16(**ctx, x_dev.get(), k, xq.get(), k, xs.get(),
                                              input_scale > 0 ? static_dev.get() : nullptr, w_dev.get(), k, ws.get(),
                                              y.get(), n, m, n, k, sums.get(), nullptr);
      ASSERT_TRUE(st.is_ok()) << st.to_string();
      const auto got = y.download();
      int mismatches = 0;
      for (size_t i = 0; i < got.size(); ++i) mismatches += got[i] != f32_to_f16(y_ref[i]);
      EXPECT_EQ(mismatches, 0) << "m=" << m << " n=" << n << " k=" << k << " input_scale=" << input_scale;
    }
  }
}

// Every CUTLASS tile on its own, at one tile of rows, a partial one and several, beside the
// dispatch with CUTLASS turned off (cuBLASLt): the same bits as the reference in both.
TEST(Int8Linear, EveryCutlassTileAndCublasLtEqualTheHostReference) {
  CROSSPOINT_SKIP_WITHOUT_GPU();
  if (!cutlass_fp8_available()) GTEST_SKIP() << "needs compute capability 9.0 and an sm_90a build";
  auto ctx = CublasLtContext::create();
  ASSERT_TRUE(ctx.is_ok()) << ctx.status().to_string();
  std::mt19937 rng(29);
  std::uniform_int_distribution<int> code(-128, 127);
  std::uniform_real_distribution<float> scale(1e-4f, 2e-3f);
  constexpr int n = 192, k = 3584;
  std::vector<int8_t> w(static_cast<size_t>(n) * k);
  for (auto& v : w) v = static_cast<int8_t>(code(rng));
  std::vector<float> w_scale(n);
  for (auto& s : w_scale) s = scale(rng);
  DeviceBuffer<int8_t> w_dev(w);
  DeviceBuffer<float> ws(w_scale);
  for (CutlassFp8Tile tile : kAllCutlassInt8Tiles) {
    const int tokens = cutlass_fp8_tile_tokens(tile);
    for (int m : {1, tokens, tokens + 3, 2 * tokens + 5}) {
      const auto x = awkward_activations(rng, m, k);
      const std::vector<float> xf = testing::f16_to_f32(x);
      std::vector<float> y_ref(static_cast<size_t>(m) * n);
      Int8LinearArgs args;
      args.x = xf.data();
      args.weight = w.data();
      args.weight_scale = w_scale.data();
      args.y = y_ref.data();
      args.num_rows = m;
      args.in_features = k;
      args.out_features = n;
      ASSERT_TRUE(int8_linear_ref(args).is_ok());
      std::vector<int8_t> q_ref;
      std::vector<float> s_ref;
      quantize_ref(x, m, k, 0.f, &q_ref, &s_ref);
      DeviceBuffer<int8_t> xq(q_ref);
      DeviceBuffer<float> xs(s_ref);
      DeviceBuffer<uint16_t> y(static_cast<size_t>(m) * n);
      y.poison();
      const Status st =
          cutlass_int8_gemm(tile, xq.get(), k, xs.get(), w_dev.get(), k, ws.get(), y.get(), n, m, n, k, nullptr);
      ASSERT_TRUE(st.is_ok()) << cutlass_fp8_tile_name(tile) << " m=" << m << ": " << st.to_string();
      auto got = y.download();
      int mismatches = 0;
      for (size_t i = 0; i < got.size(); ++i) mismatches += got[i] != f32_to_f16(y_ref[i]);
      EXPECT_EQ(mismatches, 0) << cutlass_fp8_tile_name(tile) << " m=" << m;

      (*ctx)->set_int8_cutlass(false);
      DeviceBuffer<uint16_t> x_dev(x);
      DeviceBuffer<int8_t> xq2(static_cast<size_t>(m) * k);
      DeviceBuffer<float> xs2(m);
      DeviceBuffer<int32_t> sums(static_cast<size_t>(m) * n);
      y.poison();
      const Status st2 = int8_linear_from_fp16(**ctx, x_dev.get(), k, xq2.get(), k, xs2.get(), nullptr, w_dev.get(), k,
                                               ws.get(), y.get(), n, m, n, k, sums.get(), nullptr);
      (*ctx)->set_int8_cutlass(true);
      ASSERT_TRUE(st2.is_ok()) << st2.to_string();
      got = y.download();
      mismatches = 0;
      for (size_t i = 0; i < got.size(); ++i) mismatches += got[i] != f32_to_f16(y_ref[i]);
      EXPECT_EQ(mismatches, 0) << "cuBLASLt m=" << m;
    }
  }
}

TEST(Int8Linear, RefusesShapesCublasLtCannotRun) {
  CROSSPOINT_SKIP_WITHOUT_GPU();
  auto ctx = CublasLtContext::create();
  ASSERT_TRUE(ctx.is_ok()) << ctx.status().to_string();
  DeviceBuffer<int8_t> xq(64), wq(64);
  DeviceBuffer<float> s(8);
  DeviceBuffer<uint16_t> y(64);
  DeviceBuffer<int32_t> sums(64);
  // K = 6 and N = 6 are not multiples of 4; no scratch is an argument error.
  EXPECT_EQ(
      int8_gemm_cublaslt(**ctx, xq.get(), 6, s.get(), wq.get(), 6, s.get(), y.get(), 4, 1, 4, 6, sums.get(), nullptr)
          .code(),
      StatusCode::kUnsupported);
  EXPECT_EQ(
      int8_gemm_cublaslt(**ctx, xq.get(), 8, s.get(), wq.get(), 8, s.get(), y.get(), 6, 1, 6, 8, sums.get(), nullptr)
          .code(),
      StatusCode::kUnsupported);
  EXPECT_EQ(int8_gemm_cublaslt(**ctx, xq.get(), 8, s.get(), wq.get(), 8, s.get(), y.get(), 4, 1, 4, 8, nullptr, nullptr)
                .code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace crosspoint::cuda
