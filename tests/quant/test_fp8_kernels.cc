// e4m3 conversion against ml_dtypes (fixtures), per-token quantisation against numpy, and
// the fast FP8 linear against its reference at awkward sizes.
#include <cmath>
#include <cstring>

#include "common/dtype.h"
#include "kernels/fp8.h"
#include "quant/quant_test_util.h"

namespace crosspoint {
namespace {

using quant_testing::ByteReader;
using quant_testing::max_abs_diff;
using quant_testing::random_normal;
using quant_testing::read_fixture;

TEST(E4M3Test, EveryBf16PatternMatchesMlDtypes) {
  const auto expected = read_fixture("e4m3_from_bf16.bin");
  ASSERT_EQ(expected.size(), 65536u);
  int mismatches = 0;
  for (uint32_t bits = 0; bits < 65536; ++bits) {
    const uint8_t got = f32_to_e4m3(bf16_to_f32(static_cast<uint16_t>(bits)));
    if (got != expected[bits] && ++mismatches <= 5)
      ADD_FAILURE() << "bf16 0x" << std::hex << bits << " -> 0x" << int(got) << ", ml_dtypes 0x" << int(expected[bits]);
  }
  EXPECT_EQ(mismatches, 0);
}

TEST(E4M3Test, TiesNeighboursAndRandomF32MatchMlDtypes) {
  const auto bytes = read_fixture("e4m3_f32_cases.bin");
  ByteReader reader(bytes);
  const uint32_t count = reader.take_one<uint32_t>();
  const auto inputs = reader.take<float>(count);
  const auto codes = reader.take<uint8_t>(count);
  EXPECT_TRUE(reader.at_end());
  int mismatches = 0;
  for (uint32_t i = 0; i < count; ++i) {
    const uint8_t got = f32_to_e4m3(inputs[i]);
    if (got != codes[i] && ++mismatches <= 5)
      ADD_FAILURE() << "x = " << inputs[i] << " -> 0x" << std::hex << int(got) << ", ml_dtypes 0x" << int(codes[i]);
  }
  EXPECT_EQ(mismatches, 0);
}

TEST(E4M3Test, DecodeMatchesMlDtypesForAllCodes) {
  const auto bytes = read_fixture("e4m3_decode.bin");
  ASSERT_EQ(bytes.size(), 256 * sizeof(float));
  ByteReader reader(bytes);
  const auto values = reader.take<float>(256);
  for (int q = 0; q < 256; ++q) {
    const float got = e4m3_to_f32(static_cast<uint8_t>(q));
    if (std::isnan(values[q])) {
      EXPECT_TRUE(std::isnan(got)) << "code " << q;
    } else {
      EXPECT_EQ(got, values[q]) << "code " << q;
      EXPECT_EQ(std::signbit(got), std::signbit(values[q])) << "code " << q;
    }
  }
}

TEST(E4M3Test, SaturatesAndRoundTrips) {
  EXPECT_EQ(f32_to_e4m3(1e9f), 0x7E);
  EXPECT_EQ(f32_to_e4m3(-INFINITY), 0xFE);
  EXPECT_EQ(f32_to_e4m3(std::nanf("")), 0x7F);
  for (int q = 0; q < 256; ++q) {
    if ((q & 0x7F) == 0x7F) continue;
    EXPECT_EQ(f32_to_e4m3(e4m3_to_f32(static_cast<uint8_t>(q))), q) << "code " << q;
  }
}

TEST(Fp8QuantizeTest, PerTokenMatchesNumpyFixture) {
  const auto bytes = read_fixture("fp8_per_token.bin");
  ByteReader reader(bytes);
  const int32_t rows = reader.take_one<int32_t>(), cols = reader.take_one<int32_t>();
  const auto x = reader.take<float>(rows * cols);
  const auto scale = reader.take<float>(rows);
  const auto codes = reader.take<uint8_t>(rows * cols);
  for (bool fast : {false, true}) {
    std::vector<uint8_t> xq(rows * cols);
    std::vector<float> got_scale(rows);
    const Fp8QuantizeArgs args{x.data(), 0, xq.data(), got_scale.data(), rows, cols};
    ASSERT_TRUE((fast ? fp8_quantize_per_token(args) : fp8_quantize_per_token_ref(args)).is_ok());
    for (int t = 0; t < rows; ++t) EXPECT_EQ(got_scale[t], scale[t]) << "row " << t << " fast " << fast;
    EXPECT_EQ(xq, codes) << "fast " << fast;
  }
  EXPECT_EQ(scale[3], kFp8MinActScale);  // the all-zero row hits the floor
}

TEST(Fp8QuantizeTest, FastIsBitExactWithReferenceOnStridedRows) {
  const int64_t rows = 7, cols = 1003, stride = 1010;
  auto x = random_normal(rows * stride, 11, 3.0f);
  x[2 * stride + 5] = 1e6f;  // saturating outlier
  std::vector<uint8_t> q1(rows * cols), q2(rows * cols);
  std::vector<float> s1(rows), s2(rows);
  ASSERT_TRUE(fp8_quantize_per_token({x.data(), stride, q1.data(), s1.data(), rows, cols}).is_ok());
  ASSERT_TRUE(fp8_quantize_per_token_ref({x.data(), stride, q2.data(), s2.data(), rows, cols}).is_ok());
  EXPECT_EQ(q1, q2);
  EXPECT_EQ(s1, s2);
}

// The GPU quantises fp16 activations: 1.0625 + 2^-14 lies above the e4m3 midpoint of 1 and
// 1.125 in f32 but on it in fp16, where the tie goes to the even code (1.0). 448 in the row
// makes the scale exactly 1.
TEST(Fp8QuantizeTest, QuantisesTheFp16ValueOfEachActivation) {
  const float above_midpoint = 1.0625f + 1.0f / 16384.0f;
  ASSERT_EQ(f32_to_e4m3(above_midpoint), 0x39);
  std::vector<float> x(24, above_midpoint);
  x[0] = 448.0f;
  for (bool fast : {false, true}) {
    std::vector<uint8_t> xq(x.size());
    float scale = 0.0f;
    const Fp8QuantizeArgs args{x.data(), 0, xq.data(), &scale, 1, static_cast<int64_t>(x.size())};
    ASSERT_TRUE((fast ? fp8_quantize_per_token(args) : fp8_quantize_per_token_ref(args)).is_ok());
    EXPECT_EQ(scale, 1.0f);
    for (size_t k = 1; k < x.size(); ++k) EXPECT_EQ(xq[k], 0x38) << "k " << k << " fast " << fast;
  }
}

// A static activation scale (checkpoints with a calibrated input_scale): every row takes it,
// values beyond 448 x scale saturate, and fast and reference agree bit for bit.
TEST(Fp8QuantizeTest, StaticScaleIsEveryRowsScale) {
  const int64_t rows = 3, cols = 40;
  auto x = random_normal(rows * cols, 12, 2.0f);
  x[1 * cols + 3] = 1e4f;  // beyond 448 x 0.5: saturates to 448
  std::vector<uint8_t> q1(rows * cols), q2(rows * cols);
  std::vector<float> s1(rows), s2(rows);
  ASSERT_TRUE(fp8_quantize_per_token({x.data(), 0, q1.data(), s1.data(), rows, cols, 0.5f}).is_ok());
  ASSERT_TRUE(fp8_quantize_per_token_ref({x.data(), 0, q2.data(), s2.data(), rows, cols, 0.5f}).is_ok());
  EXPECT_EQ(q1, q2);
  EXPECT_EQ(s1, std::vector<float>(rows, 0.5f));
  EXPECT_EQ(q1[1 * cols + 3], 0x7E);
  for (int64_t i = 0; i < rows * cols; ++i)
    if (i != 1 * cols + 3) EXPECT_EQ(q1[i], f32_to_e4m3(round_to_f16_saturated(x[i]) / 0.5f)) << i;
  EXPECT_EQ(fp8_quantize_per_token({x.data(), 0, q1.data(), s1.data(), rows, cols, -1.0f}).code(),
            StatusCode::kInvalidArgument);
}

struct Fp8LinearCase {
  int64_t rows, in, out;
  bool bias;
};

class Fp8LinearTest : public ::testing::TestWithParam<Fp8LinearCase> {};

TEST_P(Fp8LinearTest, FastMatchesReference) {
  const Fp8LinearCase c = GetParam();
  const auto x = random_normal(c.rows * c.in, 1);
  const auto w_float = random_normal(c.out * c.in, 2, 0.05f);
  std::vector<uint8_t> w(c.out * c.in);
  std::vector<float> w_scale(c.out);
  for (int64_t n = 0; n < c.out; ++n) {
    w_scale[n] = 0.01f * (1 + n % 5);
    for (int64_t k = 0; k < c.in; ++k) w[n * c.in + k] = f32_to_e4m3(w_float[n * c.in + k] / w_scale[n]);
  }
  const auto bias = random_normal(c.out, 3);
  std::vector<float> y(c.rows * c.out, -7.0f), y_ref(c.rows * c.out, 7.0f);
  Fp8LinearArgs args{x.data(), 0,      w.data(), w_scale.data(), c.bias ? bias.data() : nullptr,
                     y.data(), c.rows, c.in,     c.out};
  ASSERT_TRUE(fp8_linear(args).is_ok());
  args.y = y_ref.data();
  ASSERT_TRUE(fp8_linear_ref(args).is_ok());
  // Same quantised operands; only the fp32 vs double summation order differs.
  float scale_of_sums = 0.0f;
  for (float v : y_ref) scale_of_sums = std::max(scale_of_sums, std::fabs(v));
  EXPECT_LE(max_abs_diff(y, y_ref), 1e-5f * std::sqrt(float(c.in)) * (1.0f + scale_of_sums))
      << "rows " << c.rows << " in " << c.in << " out " << c.out;
}

INSTANTIATE_TEST_SUITE_P(AwkwardSizes, Fp8LinearTest,
                         ::testing::Values(Fp8LinearCase{1, 1, 1, false}, Fp8LinearCase{1, 7, 3, true},
                                           Fp8LinearCase{1, 64, 33, true}, Fp8LinearCase{3, 129, 17, false},
                                           Fp8LinearCase{5, 100, 31, true}, Fp8LinearCase{7, 257, 65, false},
                                           Fp8LinearCase{13, 576, 97, true}, Fp8LinearCase{4, 8, 16, true}));

TEST(Fp8LinearTest, ApproximatesTheFloatLinear) {
  // Quantisation error only: y from fp8 vs y from the unquantised weights and activations.
  const int64_t rows = 3, in = 256, out = 40;
  const auto x = random_normal(rows * in, 4);
  const auto w_float = random_normal(out * in, 5, 0.1f);
  std::vector<uint8_t> w(out * in);
  std::vector<float> w_scale(out);
  for (int64_t n = 0; n < out; ++n) {
    float amax = 0.0f;
    for (int64_t k = 0; k < in; ++k) amax = std::max(amax, std::fabs(w_float[n * in + k]));
    w_scale[n] = amax / kE4M3Max;
    for (int64_t k = 0; k < in; ++k) w[n * in + k] = f32_to_e4m3(w_float[n * in + k] / w_scale[n]);
  }
  std::vector<float> y(rows * out);
  ASSERT_TRUE(fp8_linear({x.data(), 0, w.data(), w_scale.data(), nullptr, y.data(), rows, in, out}).is_ok());
  double err = 0.0, norm = 0.0;
  for (int64_t t = 0; t < rows; ++t) {
    for (int64_t n = 0; n < out; ++n) {
      double exact = 0.0;
      for (int64_t k = 0; k < in; ++k) exact += double(x[t * in + k]) * w_float[n * in + k];
      err += (y[t * out + n] - exact) * (y[t * out + n] - exact);
      norm += exact * exact;
    }
  }
  EXPECT_LT(std::sqrt(err / norm), 0.05);  // e4m3 has 3 mantissa bits: a few % relative error
}

TEST(Fp8LinearTest, RejectsBadArguments) {
  float x[4] = {}, y[4] = {}, s[2] = {1, 1};
  const uint8_t w[4] = {};
  EXPECT_EQ(fp8_linear({x, 0, w, s, nullptr, y, 1, 0, 2}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(fp8_linear({x, 0, w, nullptr, nullptr, y, 1, 2, 2}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(fp8_linear({x, 1, w, s, nullptr, y, 1, 2, 2}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(fp8_linear({x, 0, w, s, nullptr, y, 1, 2, 2, NAN}).code(), StatusCode::kInvalidArgument);
}

TEST(Fp8LinearTest, StaticInputScaleMatchesReference) {
  const int64_t rows = 5, in = 48, out = 24;
  const auto x = random_normal(rows * in, 13);
  const auto w_float = random_normal(out * in, 14, 0.05f);
  std::vector<uint8_t> w(out * in);
  std::vector<float> w_scale(out, 0.02f);
  for (int64_t i = 0; i < out * in; ++i) w[i] = f32_to_e4m3(w_float[i] / 0.02f);
  std::vector<float> y(rows * out), y_ref(rows * out), y_dynamic(rows * out);
  Fp8LinearArgs args{x.data(), 0, w.data(), w_scale.data(), nullptr, y.data(), rows, in, out, 0.01f};
  ASSERT_TRUE(fp8_linear(args).is_ok());
  args.y = y_ref.data();
  ASSERT_TRUE(fp8_linear_ref(args).is_ok());
  EXPECT_LE(max_abs_diff(y, y_ref), 1e-4f);
  args.y = y_dynamic.data();
  args.input_scale = 0.0f;
  ASSERT_TRUE(fp8_linear(args).is_ok());
  EXPECT_GT(max_abs_diff(y, y_dynamic), 0.0f) << "the static scale changed nothing";
}

}  // namespace
}  // namespace crosspoint
