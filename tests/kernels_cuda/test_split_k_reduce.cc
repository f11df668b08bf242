// split_k_sum_to_f16: the slices added in slice order, bit for bit against the host sum, on
// the vector and the scalar path, padding of y untouched.
#include <gtest/gtest.h>

#include <random>

#include "kernels/cuda/split_k_reduce.h"
#include "kernels_cuda/reference.h"

namespace crosspoint::cuda {
namespace {

using testing::DeviceBuffer;

TEST(SplitKReduce, BitExactAgainstTheHostSum) {
  CROSSPOINT_SKIP_WITHOUT_GPU();
  std::mt19937 rng(31);
  std::uniform_real_distribution<float> value(-100.f, 100.f);
  for (auto [m, n, splits] : {std::tuple{1, 64, 2}, {7, 36, 3}, {33, 3584, 4}, {5, 13, 8}}) {
    std::vector<float> partials(static_cast<size_t>(splits) * m * n);
    for (auto& v : partials) v = value(rng);
    const int64_t y_stride = n + 4;
    std::vector<uint16_t> expect(static_cast<size_t>(m) * y_stride, 0xFFFF);
    split_k_sum_to_f16_reference(partials.data(), splits, static_cast<int64_t>(m) * n, expect.data(), y_stride, m, n);
    DeviceBuffer<float> p(partials);
    DeviceBuffer<uint16_t> y(expect.size());
    y.poison();
    ASSERT_TRUE(split_k_sum_to_f16(p.get(), splits, static_cast<int64_t>(m) * n, y.get(), y_stride, m, n, nullptr).is_ok());
    EXPECT_EQ(y.download(), expect) << "m=" << m << " n=" << n << " splits=" << splits;
  }
  EXPECT_EQ(split_k_sum_to_f16(nullptr, 0, 0, nullptr, 8, 1, 8, nullptr).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace crosspoint::cuda
