// The fast W4A16 linear (fused group dequantisation, rows sorted by group for act-order)
// against the plain reference on the checkpoint layout, at awkward sizes.
#include <algorithm>
#include <numeric>

#include "common/dtype.h"
#include "kernels/w4a16_linear.h"
#include "quant/quant_test_util.h"

namespace crosspoint {
namespace {

using quant_testing::max_abs;
using quant_testing::max_abs_diff;
using quant_testing::random_normal;

// A random GPTQ-layout layer.
struct RandomGptq {
  std::vector<int32_t> qweight;  // [K/8, N]
  std::vector<uint16_t> scales;  // [groups, N] fp16
  std::vector<uint8_t> zeros;    // [groups, N]
  std::vector<int32_t> g_idx;    // [K]
};

RandomGptq make_gptq(int64_t K, int64_t N, int64_t G, bool act_order, bool symmetric, uint32_t seed) {
  std::mt19937 rng(seed);
  RandomGptq w;
  const int64_t groups = w4a16_num_groups(K, G);
  w.qweight.resize(K / 8 * N);
  for (auto& word : w.qweight) word = static_cast<int32_t>(rng());
  w.scales.resize(groups * N);
  std::uniform_real_distribution<float> scale_dist(0.001f, 0.02f);
  for (auto& s : w.scales) s = f32_to_f16(scale_dist(rng));
  w.zeros.resize(groups * N);
  for (auto& z : w.zeros) z = symmetric ? 8 : static_cast<uint8_t>(rng() % 16);
  w.g_idx.resize(K);
  std::vector<int32_t> order(K);
  std::iota(order.begin(), order.end(), 0);
  if (act_order) std::shuffle(order.begin(), order.end(), rng);
  // GPTQ act-order: the i-th quantised column (in permuted order) belongs to group i / G.
  for (int64_t i = 0; i < K; ++i) w.g_idx[order[i]] = static_cast<int32_t>(i / G);
  return w;
}

struct W4A16Case {
  int64_t rows, in, out, group;
  bool act_order, symmetric, bias;
};

class W4A16LinearTest : public ::testing::TestWithParam<W4A16Case> {};

TEST_P(W4A16LinearTest, FastMatchesReference) {
  const W4A16Case c = GetParam();
  const RandomGptq w = make_gptq(c.in, c.out, c.group, c.act_order, c.symmetric, 7);
  const int64_t stride = c.in + 3;
  const auto x = random_normal(c.rows * stride, 8);
  const auto bias = random_normal(c.out, 9);
  std::vector<float> y(c.rows * c.out, -7.0f), y_ref(c.rows * c.out, 7.0f);

  W4A16LinearArgs ref{.x = x.data(),
                      .x_row_stride = stride,
                      .qweight = w.qweight.data(),
                      .scales = w.scales.data(),
                      .zeros = w.zeros.data(),
                      .g_idx = w.g_idx.data(),
                      .bias = c.bias ? bias.data() : nullptr,
                      .y = y_ref.data(),
                      .num_rows = c.rows,
                      .in_features = c.in,
                      .out_features = c.out,
                      .group_size = c.group};
  ASSERT_TRUE(w4a16_linear_ref(ref).is_ok());

  W4A16LinearArgs fast = ref;
  fast.g_idx = nullptr;
  fast.y = y.data();
  W4A16SortedRows sorted;
  EXPECT_EQ(w4a16_g_idx_is_trivial(w.g_idx.data(), c.in, c.group), !c.act_order);
  if (c.act_order) {
    auto result = w4a16_sort_rows_by_group(w.qweight.data(), w.g_idx.data(), c.in, c.out, c.group, "test");
    ASSERT_TRUE(result.is_ok()) << result.status().to_string();
    sorted = std::move(result).value();
    fast.qweight = sorted.qweight.data();
    fast.k_perm = sorted.k_perm.data();
  }
  ASSERT_TRUE(w4a16_linear(fast).is_ok());
  EXPECT_LE(max_abs_diff(y, y_ref), 2e-6f * std::sqrt(float(c.in)) * (1.0f + max_abs(y_ref)))
      << "rows " << c.rows << " in " << c.in << " out " << c.out << " group " << c.group;
}

INSTANTIATE_TEST_SUITE_P(
    AwkwardSizes, W4A16LinearTest,
    ::testing::Values(W4A16Case{1, 8, 1, 8, false, true, false}, W4A16Case{1, 64, 23, 32, true, true, true},
                      W4A16Case{3, 256, 16, 128, false, true, true}, W4A16Case{5, 384, 40, 128, true, true, false},
                      W4A16Case{7, 128, 33, 64, false, false, true}, W4A16Case{2, 512, 100, 128, true, false, true},
                      W4A16Case{9, 256, 8, 256, false, true, false}, W4A16Case{4, 96, 17, 16, true, true, true}));

TEST(W4A16LinearTest, KnownValuesFromHandPackedWords) {
  // K = 8, N = 1, one group: q = 0..7 in rows 0..7, zero point 8, scale 0.5
  // W[k] = 0.5 * (k - 8); x = 1 everywhere -> y = 0.5 * (28 - 64) = -18
  int32_t word = 0;
  for (int k = 0; k < 8; ++k) word |= k << (4 * k);
  const uint16_t scale = f32_to_f16(0.5f);
  const uint8_t zero = 8;
  std::vector<float> x(8, 1.0f);
  float y = 0.0f, y_ref = 0.0f;
  W4A16LinearArgs args{.x = x.data(),
                       .qweight = &word,
                       .scales = &scale,
                       .zeros = &zero,
                       .y = &y,
                       .num_rows = 1,
                       .in_features = 8,
                       .out_features = 1,
                       .group_size = 8};
  ASSERT_TRUE(w4a16_linear(args).is_ok());
  args.y = &y_ref;
  ASSERT_TRUE(w4a16_linear_ref(args).is_ok());
  EXPECT_FLOAT_EQ(y, -18.0f);
  EXPECT_FLOAT_EQ(y_ref, -18.0f);
}

TEST(W4A16LinearTest, RefusesGroupsThatDoNotTile) {
  std::vector<int32_t> qweight(2 * 4, 0), g_idx(16, 0);
  g_idx[3] = 1;  // group 0 gets 15 rows, group 1 gets 1: not 8 each
  auto result = w4a16_sort_rows_by_group(qweight.data(), g_idx.data(), 16, 4, 8, "layers.0.q_proj");
  ASSERT_FALSE(result.is_ok());
  EXPECT_NE(result.status().message().find("layers.0.q_proj"), std::string::npos);
  float x[16] = {}, y[4] = {};
  uint16_t s[4] = {};
  uint8_t z[4] = {};
  W4A16LinearArgs args{.x = x,
                       .qweight = qweight.data(),
                       .scales = s,
                       .zeros = z,
                       .y = y,
                       .num_rows = 1,
                       .in_features = 16,
                       .out_features = 4,
                       .group_size = 12};
  EXPECT_EQ(w4a16_linear(args).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace crosspoint
