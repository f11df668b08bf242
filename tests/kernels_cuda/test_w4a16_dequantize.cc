// w4a16_dequantize against the GPTQ formula (w = s[g_idx[k], n] * (q[k, n] - 8), one fp16
// rounding) on random checkpoints at awkward sizes, with act-order rows and a padded row
// stride; and the dequantised weight through the fp16 GEMM against the matmul reference at a
// many-row shape, the path run_cuda_linear takes from kW4A16DequantMinRows rows.
#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <string>

#include "common/dtype.h"
#include "kernels/cuda/cublaslt_gemm.h"
#include "kernels/cuda/linear.h"
#include "kernels/cuda/w4a16_dequantize.h"
#include "kernels/cuda/w4a16_gemm.h"
#include "kernels_cuda/reference.h"
#include "kernels_cuda/w4a16_test_util.h"

namespace crosspoint::cuda {
namespace {

using testing::DeviceBuffer;
using testing::GptqLinear;
using testing::make_gptq;

TEST(W4A16Dequantize, RefusesBadShapesBeforeLaunch) {
  const auto* p32 = reinterpret_cast<const uint32_t*>(16);
  auto* p16 = reinterpret_cast<uint16_t*>(16);
  EXPECT_EQ(w4a16_dequantize(p32, p32, 64, 100, 128, p16, 128, nullptr).code(), StatusCode::kUnsupported);
  EXPECT_EQ(w4a16_dequantize(p32, p32, 20, 128, 128, p16, 128, nullptr).code(), StatusCode::kUnsupported);
  EXPECT_EQ(w4a16_dequantize(p32, p32, 64, 128, 96, p16, 128, nullptr).code(), StatusCode::kUnsupported);
  EXPECT_EQ(w4a16_dequantize(p32, p32, 64, 128, 128, p16, 100, nullptr).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(w4a16_dequantize(p32, nullptr, 64, 128, 128, p16, 128, nullptr).code(), StatusCode::kInvalidArgument);
}

void check_dequantize(int n, int k, int group_size, bool act_order, int64_t stride, uint32_t seed) {
  std::mt19937 rng(seed);
  const GptqLinear lin = make_gptq(rng, k, n, group_size, act_order);
  auto packed = w4a16_repack(lin.qweight.data(), lin.scales.data(), lin.g_idx.data(), k, n, group_size, "test");
  ASSERT_TRUE(packed.is_ok()) << packed.status().to_string();
  DeviceBuffer<uint32_t> weight(packed->weight), scales(packed->scales);
  DeviceBuffer<uint16_t> w(static_cast<size_t>(n) * stride);
  w.poison();
  const Status st = w4a16_dequantize(weight.get(), scales.get(), n, k, group_size, w.get(), stride, nullptr);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<uint16_t> got = w.download();
  int64_t wrong = 0, padding_touched = 0;
  for (int col = 0; col < n; ++col) {
    for (int64_t i = 0; i < stride; ++i) {
      const uint16_t value = got[static_cast<size_t>(col) * stride + i];
      if (i >= k) {
        padding_touched += value != 0xFFFF;
        continue;
      }
      // Packed row i is checkpoint row k_perm[i] (act-order), else row i.
      const int row = packed->k_perm.empty() ? static_cast<int>(i) : packed->k_perm[i];
      const uint16_t want = f32_to_f16(static_cast<float>(lin.weight(row, col)));  // exact in f32, rounded once
      if (value != want && ++wrong <= 5)
        ADD_FAILURE() << "W[" << col << "][" << i << "] = " << value << ", want " << want;
    }
  }
  EXPECT_EQ(wrong, 0) << "n=" << n << " k=" << k << " g=" << group_size << " act_order " << act_order;
  EXPECT_EQ(padding_touched, 0) << "writes past k in the padded stride";
}

TEST(W4A16Dequantize, BitExactAgainstTheGptqFormula) {
  CROSSPOINT_SKIP_WITHOUT_GPU();
  check_dequantize(48, 192, 64, false, 192, 1);
  check_dequantize(80, 320, -1, false, 328, 2);     // one group over K, padded stride
  check_dequantize(144, 512, 128, true, 512, 3);    // act-order: rows in the packed order
  check_dequantize(16, 64, 64, false, 64, 4);       // one slab
  check_dequantize(1040, 896, 128, false, 896, 5);  // more slabs than one block's warps, not a multiple of 8
}

// The many-row path: dequantise, then the fp16 GEMM, against the double-precision matmul.
TEST(W4A16Dequantize, ThroughTheFp16GemmMatchesTheReference) {
  CROSSPOINT_SKIP_WITHOUT_GPU();
  auto ctx = CublasLtContext::create();
  ASSERT_TRUE(ctx.is_ok()) << ctx.status().to_string();
  std::mt19937 rng(11);
  const int m = kW4A16DequantMinRows + 17, n = 336, k = 640, group_size = 128;
  const GptqLinear lin = make_gptq(rng, k, n, group_size, true);
  auto packed = w4a16_repack(lin.qweight.data(), lin.scales.data(), lin.g_idx.data(), k, n, group_size, "test");
  ASSERT_TRUE(packed.is_ok());
  const auto x = testing::random_f16(rng, static_cast<size_t>(m) * k, -1.f, 1.f);
  DeviceBuffer<uint32_t> weight(packed->weight), scales(packed->scales);
  DeviceBuffer<int32_t> perm(packed->k_perm);
  DeviceBuffer<uint16_t> x_dev(x), x_perm(x.size()), w(static_cast<size_t>(n) * k), y(static_cast<size_t>(m) * n);
  y.poison();
  ASSERT_TRUE(w4a16_permute_columns(x_dev.get(), perm.get(), x_perm.get(), m, k, nullptr).is_ok());
  ASSERT_TRUE(w4a16_dequantize(weight.get(), scales.get(), n, k, group_size, w.get(), k, nullptr).is_ok());
  const Status st = fp16_linear(**ctx, x_perm.get(), k, w.get(), k, y.get(), n, m, n, k, nullptr);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const auto ref = testing::w4a16_reference(lin, x, m, k);
  EXPECT_LT(testing::relative_error_f16(y.download(), ref), 3e-3);
}

}  // namespace
}  // namespace crosspoint::cuda
