#include <tuple>

#include "kernels/linear.h"
#include "kernel_test_util.h"

namespace crosspoint {
namespace {

using testing::max_abs_diff;
using testing::random_floats;
using testing::store_as;

struct LinearCase {
  int64_t rows, in, out;
  DType dtype;
  bool bias;
};

class LinearTest : public ::testing::TestWithParam<LinearCase> {};

TEST_P(LinearTest, FastMatchesReference) {
  const LinearCase c = GetParam();
  const auto x = random_floats(c.rows * c.in, 1);
  const auto w = store_as(random_floats(c.out * c.in, 2), c.dtype);
  const auto bias = random_floats(c.out, 3);
  std::vector<float> y(c.rows * c.out, -7.0f), y_ref(c.rows * c.out, 7.0f);
  LinearArgs args{x.data(), 0, w.bytes.data(), c.dtype, c.bias ? bias.data() : nullptr, y.data(), c.rows, c.in, c.out};
  ASSERT_TRUE(linear(args).is_ok());
  args.y = y_ref.data();
  ASSERT_TRUE(linear_ref(args).is_ok());
  // fp32 accumulation of in_features products of magnitude <= 1: error grows like sqrt(K).
  EXPECT_LE(max_abs_diff(y, y_ref), 2e-5f * std::sqrt(static_cast<float>(c.in)) + 1e-6f)
      << "rows " << c.rows << " in " << c.in << " out " << c.out << " dtype " << dtype_name(c.dtype);
}

INSTANTIATE_TEST_SUITE_P(
    AwkwardSizes, LinearTest,
    ::testing::Values(LinearCase{1, 1, 1, DType::kF32, false}, LinearCase{1, 7, 3, DType::kF16, true},
                      LinearCase{1, 64, 33, DType::kBF16, true}, LinearCase{3, 129, 17, DType::kF16, false},
                      LinearCase{5, 100, 31, DType::kF32, true}, LinearCase{7, 257, 65, DType::kBF16, false},
                      LinearCase{13, 576, 97, DType::kF16, true}, LinearCase{2, 15, 1, DType::kF32, true},
                      LinearCase{33, 96, 50, DType::kF16, false}, LinearCase{4, 8, 16, DType::kBF16, true}));

TEST(LinearTest, RowStrideReadsOnlyThePrefixOfEachRow) {
  const int64_t rows = 3, in = 10, out = 5, stride = 16;
  const auto x = random_floats(rows * stride, 4);
  const auto w = store_as(random_floats(out * in, 5), DType::kF16);
  std::vector<float> dense(rows * in);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t k = 0; k < in; ++k) dense[r * in + k] = x[r * stride + k];
  std::vector<float> y(rows * out), y_ref(rows * out);
  ASSERT_TRUE(linear({x.data(), stride, w.bytes.data(), DType::kF16, nullptr, y.data(), rows, in, out}).is_ok());
  ASSERT_TRUE(linear_ref({dense.data(), 0, w.bytes.data(), DType::kF16, nullptr, y_ref.data(), rows, in, out}).is_ok());
  EXPECT_LE(max_abs_diff(y, y_ref), 1e-5f);
}

TEST(LinearTest, KnownValues) {
  // y = x W^T + b with W = [[1, 2], [3, 4], [5, 6]], x = [1, -1], b = [0.5, 0, 0]
  const float w[] = {1, 2, 3, 4, 5, 6}, x[] = {1, -1}, b[] = {0.5f, 0, 0};
  float y[3];
  ASSERT_TRUE(linear({x, 0, w, DType::kF32, b, y, 1, 2, 3}).is_ok());
  EXPECT_FLOAT_EQ(y[0], -0.5f);
  EXPECT_FLOAT_EQ(y[1], -1.0f);
  EXPECT_FLOAT_EQ(y[2], -1.0f);
}

TEST(LinearTest, RejectsUnsupportedDtypeAndBadSizes) {
  float x[4] = {}, y[4] = {};
  const uint8_t w[4] = {};
  const Status s = linear({x, 0, w, DType::kI8, nullptr, y, 1, 2, 2});
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_NE(s.message().find("i8"), std::string::npos) << s.message();
  EXPECT_FALSE(linear({x, 0, w, DType::kF32, nullptr, y, 1, 0, 2}).is_ok());
}

}  // namespace
}  // namespace crosspoint
