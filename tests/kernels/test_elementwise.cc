// Embedding, RMSNorm, RoPE, SiLU·mul, residual add, softmax, fp16 rounding: fast vs reference
// at awkward sizes, plus values worked out by hand.
#include <cmath>
#include <limits>
#include <cstring>

#include "kernels/embedding.h"
#include "kernels/f16_rounding.h"
#include "kernels/residual_add.h"
#include "kernels/rms_norm.h"
#include "kernels/rope.h"
#include "kernels/silu_mul.h"
#include "kernels/softmax.h"
#include "kernel_test_util.h"

namespace crosspoint {
namespace {

using testing::max_abs_diff;
using testing::random_floats;
using testing::store_as;

TEST(F16RoundingTest, FastIsBitExactWithReferenceAndSaturates) {
  auto x = random_floats(1003, 21);
  for (size_t i = 0; i < x.size(); i += 7) x[i] *= std::ldexp(1.0f, static_cast<int>(i % 40) - 20);
  x[3] = 1e6f;      // beyond fp16: 65504
  x[4] = -7e4f;     // -65504
  x[5] = 65519.0f;  // rounds to 65504 (fp16 would round 65520 up to inf)
  x[6] = std::nanf("");
  x[8] = 1e-6f;                   // an fp16 subnormal
  x[9] = 1.0f + 1.0f / 2048.0f;   // a tie: to the even 1.0
  x[10] = 1.0f + 3.0f / 2048.0f;  // a tie: to the even 1 + 2^-9
  std::vector<float> fast(x.size()), ref(x.size());
  round_to_f16(x.data(), fast.data(), static_cast<int64_t>(x.size()));
  round_to_f16_ref(x.data(), ref.data(), static_cast<int64_t>(x.size()));
  EXPECT_EQ(std::memcmp(fast.data(), ref.data(), fast.size() * sizeof(float)), 0);
  EXPECT_EQ(ref[3], 65504.0f);
  EXPECT_EQ(ref[4], -65504.0f);
  EXPECT_EQ(ref[5], 65504.0f);
  EXPECT_TRUE(std::isnan(ref[6]));
  EXPECT_EQ(ref[8], std::ldexp(17.0f, -24));  // 1e-6 / 2^-24 = 16.78: 17 steps of 2^-24
  EXPECT_EQ(ref[9], 1.0f);
  EXPECT_EQ(ref[10], 1.0f + 1.0f / 512.0f);
  for (size_t i = 0; i < x.size(); ++i) {
    if (!std::isnan(x[i]) && std::fabs(x[i]) < 60000.0f && std::fabs(x[i]) > 1e-4f) {
      ASSERT_LE(std::fabs(ref[i] - x[i]), std::fabs(x[i]) / 2048.0f) << i;  // half an fp16 ulp
    }
  }
  round_to_f16(x.data(), x.data(), static_cast<int64_t>(x.size()));  // in place
  EXPECT_EQ(std::memcmp(x.data(), ref.data(), x.size() * sizeof(float)), 0);
}

TEST(RoundToBf16Test, RoundsToNearestEvenOverF32sRange) {
  const float kMax = std::numeric_limits<float>::max(), kInf = std::numeric_limits<float>::infinity();
  std::vector<float> x = {1.0f + 1.0f / 256.0f,  // a tie: to the even 1.0 (7 mantissa bits)
                          1.0f + 3.0f / 256.0f,  // a tie: to the even 1 + 2^-6
                          1.0f + 3.0f / 512.0f,  // past the tie: 1 + 2^-8 + 2^-9 -> 1 + 2^-7
                          -3.0e38f,              // large values keep their magnitude (no saturation)
                          kMax,                  // within half an ulp of the top: infinity, as RNE
                          kInf,
                          -0.0f,
                          std::numeric_limits<float>::quiet_NaN(),
                          std::ldexp(1.0f, -130),  // a subnormal stays a subnormal (bf16 has f32's exponent)
                          393216.0f};              // 3 x 2^17: beyond fp16's range, a bf16 value, kept
  std::vector<float> out(x.size());
  round_to_bf16(x.data(), out.data(), static_cast<int64_t>(x.size()));
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(out[1], 1.0f + 1.0f / 64.0f);
  EXPECT_EQ(out[2], 1.0f + 1.0f / 128.0f);
  EXPECT_LE(std::fabs(out[3] + 3.0e38f), 3.0e38f / 256.0f);
  EXPECT_EQ(out[4], kInf);
  EXPECT_EQ(out[5], kInf);
  EXPECT_TRUE(out[6] == 0.0f && std::signbit(out[6]));
  EXPECT_TRUE(std::isnan(out[7]));
  EXPECT_EQ(out[8], std::ldexp(1.0f, -130));
  EXPECT_EQ(out[9], 393216.0f);
  for (float v : out) {  // every result is a bf16 value: its low 16 bits are zero
    uint32_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    EXPECT_EQ(bits & 0xffffu, std::isnan(v) ? (bits & 0xffffu) : 0u);
  }
  round_to_bf16(x.data(), x.data(), static_cast<int64_t>(x.size()));  // in place
  EXPECT_EQ(std::memcmp(x.data(), out.data(), x.size() * sizeof(float)), 0);
}

TEST(EmbeddingTest, GathersRowsInEveryDtype) {
  for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16}) {
    const int64_t vocab = 37, hidden = 19;
    const auto table = store_as(random_floats(vocab * hidden, 7), dtype);
    const std::vector<int32_t> ids = {0, 36, 5, 5, 17};
    std::vector<float> out(ids.size() * hidden), out_ref(ids.size() * hidden);
    EmbeddingArgs args{ids.data(), static_cast<int64_t>(ids.size()), table.bytes.data(), dtype, vocab, hidden,
                       out.data()};
    ASSERT_TRUE(embedding(args).is_ok());
    args.out = out_ref.data();
    ASSERT_TRUE(embedding_ref(args).is_ok());
    EXPECT_EQ(out, out_ref);
    EXPECT_EQ(out[1 * hidden + 3], table.values[36 * hidden + 3]);
  }
}

TEST(EmbeddingTest, OutOfRangeIdIsAnError) {
  const std::vector<float> table(4 * 2);
  const int32_t ids[] = {1, 4};
  float out[4];
  const Status s = embedding({ids, 2, table.data(), DType::kF32, 4, 2, out});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("token id 4"), std::string::npos) << s.message();
}

TEST(RmsNormTest, FastMatchesReference) {
  for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16}) {
    for (int64_t dim : {1, 7, 64, 129}) {
      const int64_t rows = 5;
      const auto x = random_floats(rows * dim, 11, -3.0f, 3.0f);
      const auto w = store_as(random_floats(dim, 12), dtype);
      std::vector<float> y(rows * dim), y_ref(rows * dim);
      RmsNormArgs args{x.data(), w.bytes.data(), dtype, y.data(), rows, dim, 1e-5f};
      ASSERT_TRUE(rms_norm(args).is_ok());
      args.y = y_ref.data();
      ASSERT_TRUE(rms_norm_ref(args).is_ok());
      EXPECT_LE(max_abs_diff(y, y_ref), 1e-5f) << "dim " << dim;
    }
  }
}

TEST(RmsNormTest, KnownValue) {
  // x = [3, 4]: mean square 12.5, rms = sqrt(12.5 + eps).
  const float x[] = {3, 4}, w[] = {1, 2};
  float y[2];
  ASSERT_TRUE(rms_norm({x, w, DType::kF32, y, 1, 2, 0.0f}).is_ok());
  EXPECT_NEAR(y[0], 3 / std::sqrt(12.5), 1e-6);
  EXPECT_NEAR(y[1], 2 * 4 / std::sqrt(12.5), 1e-6);
}

TEST(RopeTest, InvFreqMatchesTheFormula) {
  const auto inv_freq = rope_inv_freq(8, 10000.0);
  ASSERT_EQ(inv_freq.size(), 4u);
  EXPECT_FLOAT_EQ(inv_freq[0], 1.0f);
  EXPECT_NEAR(inv_freq[1], 0.1f, 1e-7);
  EXPECT_NEAR(inv_freq[3], 0.001f, 1e-9);
}

TEST(RopeTest, FastMatchesReferenceWithStride) {
  const int64_t tokens = 5, heads = 3, head_dim = 10, stride = heads * head_dim + 6;
  const auto inv_freq = rope_inv_freq(head_dim, 1e6);
  const std::vector<int32_t> positions = {0, 1, 7, 300, 4095};
  auto x = random_floats(tokens * stride, 13);
  auto x_ref = x;
  ASSERT_TRUE(rope({x.data(), stride, tokens, heads, head_dim, positions.data(), inv_freq.data()}).is_ok());
  ASSERT_TRUE(rope_ref({x_ref.data(), stride, tokens, heads, head_dim, positions.data(), inv_freq.data()}).is_ok());
  EXPECT_LE(max_abs_diff(x, x_ref), 1e-6f);
  // The padding between rows is untouched.
  const auto original = random_floats(tokens * stride, 13);
  EXPECT_EQ(x[heads * head_dim + 2], original[heads * head_dim + 2]);
}

TEST(RopeTest, RotatesPairsByPositionTimesFrequency) {
  // head_dim 2: one pair (x0, x1) rotated by angle = position * 1.
  float x[] = {1.0f, 0.0f};
  const int32_t position = 2;
  const auto inv_freq = rope_inv_freq(2, 10000.0);
  ASSERT_TRUE(rope({x, 0, 1, 1, 2, &position, inv_freq.data()}).is_ok());
  EXPECT_NEAR(x[0], std::cos(2.0), 1e-6);
  EXPECT_NEAR(x[1], std::sin(2.0), 1e-6);
  EXPECT_FALSE(rope({x, 0, 1, 1, 3, &position, inv_freq.data()}).is_ok());
}

TEST(SiluMulTest, FastMatchesReference) {
  for (int64_t n : {1, 9, 1000, 10007}) {
    const auto gate = random_floats(n, 21, -8.0f, 8.0f);
    const auto up = random_floats(n, 22);
    std::vector<float> out(n), out_ref(n);
    ASSERT_TRUE(silu_mul({gate.data(), up.data(), out.data(), n}).is_ok());
    ASSERT_TRUE(silu_mul_ref({gate.data(), up.data(), out_ref.data(), n}).is_ok());
    EXPECT_LE(max_abs_diff(out, out_ref), 1e-5f);
  }
  const float g = 1.0f, u = 2.0f;
  float o;
  ASSERT_TRUE(silu_mul({&g, &u, &o, 1}).is_ok());
  EXPECT_NEAR(o, 2.0 / (1.0 + std::exp(-1.0)), 1e-6);
}

TEST(ResidualAddTest, FastMatchesReference) {
  for (int64_t n : {1, 13, 40001}) {
    auto y = random_floats(n, 31);
    auto y_ref = y;
    const auto x = random_floats(n, 32);
    ASSERT_TRUE(residual_add(y.data(), x.data(), n).is_ok());
    ASSERT_TRUE(residual_add_ref(y_ref.data(), x.data(), n).is_ok());
    EXPECT_EQ(y, y_ref);
  }
}

TEST(SoftmaxTest, FastMatchesReferenceAndSumsToOne) {
  for (int64_t cols : {1, 3, 17, 49152}) {
    const int64_t rows = 3;
    auto x = random_floats(rows * cols, 41, -30.0f, 30.0f);
    auto x_ref = x;
    ASSERT_TRUE(softmax(x.data(), rows, cols).is_ok());
    ASSERT_TRUE(softmax_ref(x_ref.data(), rows, cols).is_ok());
    EXPECT_LE(max_abs_diff(x, x_ref), 1e-6f);
    double sum = 0.0;
    for (int64_t i = 0; i < cols; ++i) sum += x[i];
    EXPECT_NEAR(sum, 1.0, 1e-4);
  }
  float big[] = {1000.0f, 1000.0f};  // no overflow thanks to the max subtraction
  ASSERT_TRUE(softmax(big, 1, 2).is_ok());
  EXPECT_FLOAT_EQ(big[0], 0.5f);
}

}  // namespace
}  // namespace crosspoint
