// RTN and GPTQ int4 quantisation: the inverse-Hessian factor, the packing layout, and the
// point of GPTQ: a smaller output error ||X (W - Wq)|| than RTN on correlated inputs.
#include <cmath>

#include "common/dtype.h"
#include "quant/fp8_quantizer.h"
#include "kernels/fp8.h"
#include "quant/int4_quantizer.h"
#include "quant/quant_test_util.h"

namespace crosspoint {
namespace {

using quant_testing::random_normal;

// Calibration inputs with strongly correlated, unequally scaled features: x = z A.
std::vector<float> correlated_inputs(int64_t T, int64_t K, uint32_t seed) {
  const auto z = random_normal(T * K, seed);
  const auto a = random_normal(K * K, seed + 1, 0.3f);
  std::vector<float> x(T * K, 0.0f);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t j = 0; j < K; ++j) {
      double s = z[t * K + j] * (1.0 + (j % 5));
      for (int64_t i = 0; i < K; i += 3) s += z[t * K + i] * a[i * K + j];
      x[t * K + j] = static_cast<float>(s);
    }
  return x;
}

std::vector<double> hessian_of(const std::vector<float>& x, int64_t T, int64_t K) {
  std::vector<double> h(K * K, 0.0);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t i = 0; i < K; ++i)
      for (int64_t j = 0; j < K; ++j) h[i * K + j] += double(x[t * K + i]) * x[t * K + j];
  return h;
}

// ||X (W - Wq)||^2 with W, Wq as [K, N].
double output_error(const std::vector<float>& x, int64_t T, int64_t K, int64_t N, const std::vector<float>& w,
                    const std::vector<float>& wq) {
  double err = 0.0;
  for (int64_t t = 0; t < T; ++t)
    for (int64_t n = 0; n < N; ++n) {
      double s = 0.0;
      for (int64_t k = 0; k < K; ++k) s += double(x[t * K + k]) * (w[k * N + n] - wq[k * N + n]);
      err += s * s;
    }
  return err;
}

TEST(GptqFactorTest, UpperFactorInvertsTheDampedHessian) {
  const int64_t K = 24, T = 64;
  const auto x = correlated_inputs(T, K, 1);
  const auto h = hessian_of(x, T, K);
  Int4QuantOptions options;
  options.damp_percent = 0.01;
  auto f = gptq_factor_hessian(h, K, options);
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  double mean_diag = 0.0;
  for (int64_t k = 0; k < K; ++k) mean_diag += h[k * K + k] / K;
  // U^T U (H + damp I) = I
  for (int64_t i = 0; i < K; ++i)
    for (int64_t j = 0; j < K; ++j) {
      double s = 0.0;
      for (int64_t m = 0; m < K; ++m) {
        double hinv_im = 0.0;
        for (int64_t r = 0; r <= std::min(i, m); ++r) hinv_im += f->hinv_upper[r * K + i] * f->hinv_upper[r * K + m];
        s += hinv_im * (h[m * K + j] + (m == j ? 0.01 * mean_diag : 0.0));
      }
      EXPECT_NEAR(s, i == j ? 1.0 : 0.0, 1e-8) << i << "," << j;
    }
  for (int64_t i = 0; i < K; ++i)
    for (int64_t j = 0; j < i; ++j) EXPECT_EQ(f->hinv_upper[i * K + j], 0.0);
}

class GptqBeatsRtnTest : public ::testing::TestWithParam<bool> {};

TEST_P(GptqBeatsRtnTest, SmallerOutputErrorOnCalibrationInputs) {
  const int64_t K = 128, N = 32, T = 512;
  const auto x = correlated_inputs(T, K, 5);
  const auto w = random_normal(K * N, 6, 0.05f);
  Int4QuantOptions options;
  options.group_size = 32;
  options.act_order = GetParam();
  options.block_size = 48;  // not a multiple of the group: exercises the lazy-update borders
  auto rtn = rtn_quantize_int4(w.data(), K, N, options);
  ASSERT_TRUE(rtn.is_ok());
  auto factor = gptq_factor_hessian(hessian_of(x, T, K), K, options);
  ASSERT_TRUE(factor.is_ok());
  auto gptq = gptq_quantize_int4(w.data(), K, N, factor.value(), options);
  ASSERT_TRUE(gptq.is_ok());
  const double rtn_err = output_error(x, T, K, N, w, rtn->dequantize());
  const double gptq_err = output_error(x, T, K, N, w, gptq->dequantize());
  EXPECT_LT(gptq_err, 0.8 * rtn_err) << "rtn " << rtn_err << " gptq " << gptq_err;
  // Every group holds exactly group_size rows, also under act-order.
  std::vector<int> count(K / 32, 0);
  for (int32_t g : gptq->g_idx) ++count[g];
  for (int c : count) EXPECT_EQ(c, 32);
}

INSTANTIATE_TEST_SUITE_P(ActOrder, GptqBeatsRtnTest, ::testing::Bool());

TEST(Int4QuantizerTest, RtnIsRoundToNearestWithSymmetricScale) {
  // One group of 8 rows, one column: amax 1.5 -> scale 2 * 1.5 / 15 = 0.2, zero 8.
  const std::vector<float> w = {1.5f, -1.5f, 0.0f, 0.29f, 0.31f, -0.7f, 1.0f, -0.1f, 0, 0, 0, 0, 0, 0, 0, 0,
                                0,    0,     0,    0,     0,     0,     0,    0,     0, 0, 0, 0, 0, 0, 0, 0,
                                0,    0,     0,    0,     0,     0,     0,    0,     0, 0, 0, 0, 0, 0, 0, 0,
                                0,    0,     0,    0,     0,     0,     0,    0,     0, 0, 0, 0, 0, 0, 0, 0};
  // K = 8 rows, N = 8 columns: only column 0 is non-zero (w laid out [K, N] row-major)
  std::vector<float> w_t(64, 0.0f);
  for (int k = 0; k < 8; ++k) w_t[k * 8] = w[k];
  Int4QuantOptions options;
  options.group_size = 8;
  auto q = rtn_quantize_int4(w_t.data(), 8, 8, options);
  ASSERT_TRUE(q.is_ok());
  EXPECT_FLOAT_EQ(f16_to_f32(q->scales[0]), f16_to_f32(f32_to_f16(0.2f)));
  EXPECT_EQ(q->zeros[0], 8);
  const uint8_t expected[8] = {15, 0, 8, 9, 10, 4, 13, 7};  // 7.5 -> 8 -> clamp 15; -7.5 -> -8 -> 0
  for (int k = 0; k < 8; ++k) EXPECT_EQ(q->q[k * 8], expected[k]) << "row " << k;
}

TEST(Int4QuantizerTest, PackingMatchesTheDocumentedLayout) {
  Int4Quantized q;
  q.in_features = 8;
  q.out_features = 8;
  q.group_size = 8;
  q.q.resize(64);
  for (int k = 0; k < 8; ++k)
    for (int n = 0; n < 8; ++n) q.q[k * 8 + n] = static_cast<uint8_t>((k + n) % 16);
  q.scales.assign(8, f32_to_f16(1.0f));
  q.zeros.assign(8, 8);
  q.g_idx.assign(8, 0);
  const auto tensors = pack_gptq_tensors(q, "p");
  ASSERT_EQ(tensors.size(), 4u);
  EXPECT_EQ(tensors[0].name, "p.qweight");
  EXPECT_EQ(tensors[0].shape, (std::vector<int64_t>{1, 8}));
  uint32_t word0;  // column 0: rows 0..7 hold 0..7, low nibble first
  std::memcpy(&word0, tensors[0].bytes.data(), 4);
  EXPECT_EQ(word0, 0x76543210u);
  uint32_t zeros;  // v1: zero 8 stored as 7 in every nibble
  std::memcpy(&zeros, tensors[1].bytes.data(), 4);
  EXPECT_EQ(zeros, 0x77777777u);
  EXPECT_EQ(tensors[2].dtype, DType::kF16);
  EXPECT_EQ(tensors[3].name, "p.g_idx");
}

TEST(Int4QuantizerTest, RefusesGroupsThatDoNotDivide) {
  std::vector<float> w(96 * 8, 0.1f);
  Int4QuantOptions options;
  options.group_size = 64;
  auto q = rtn_quantize_int4(w.data(), 96, 8, options);
  ASSERT_FALSE(q.is_ok());
  EXPECT_NE(q.status().message().find("does not divide"), std::string::npos);
}

TEST(Fp8QuantizerTest, PerChannelScaleAndRoundTrip) {
  const int64_t N = 6, K = 50;
  auto w = random_normal(N * K, 9, 0.3f);
  w[2 * K + 3] = 5.0f;  // row 2's amax
  const Fp8Quantized q = quantize_fp8_per_channel(w.data(), N, K);
  EXPECT_FLOAT_EQ(q.scale[2], 5.0f / 448.0f);
  EXPECT_EQ(q.weight[2 * K + 3], 0x7E);  // the amax maps to 448 exactly
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < K; ++k) {
      const float back = e4m3_to_f32(q.weight[n * K + k]) * q.scale[n];
      // e4m3 keeps 3 mantissa bits (relative step 1/8, so error <= 1/16), subnormals absolute
      EXPECT_NEAR(back, w[n * K + k], std::fabs(w[n * K + k]) / 16 + q.scale[n] * std::ldexp(1.0f, -10));
    }
}

}  // namespace
}  // namespace crosspoint
