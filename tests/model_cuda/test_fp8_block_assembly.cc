// The host half of the CUDA block-wise FP8 upload (runs without a GPU): the fused layer's block
// scales in the layout cuBLASLt's 128 x 128 block scaling reads (a row per 128 output channels,
// padded to 16 bytes), and the refusals of what that GEMM cannot run.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "kernels/cuda/cublaslt_gemm.h"
#include "model/cuda/cuda_linear.h"
#include "quant/fp8_block_linear_weight.h"

namespace crosspoint {
namespace {

// A block-wise FP8 layer of N x K whose scale for block (bn, bk) is first + bn * 100 + bk.
std::unique_ptr<Fp8BlockLinearWeight> layer(int64_t N, int64_t K, float first, std::vector<uint8_t>& storage,
                                            int64_t block = 128) {
  storage.assign(static_cast<size_t>(N * K), 0x38);  // e4m3 1.0
  const int64_t rows = (N + block - 1) / block, cols = (K + block - 1) / block;
  std::vector<float> scales(static_cast<size_t>(rows * cols));
  for (int64_t bn = 0; bn < rows; ++bn)
    for (int64_t bk = 0; bk < cols; ++bk) scales[bn * cols + bk] = first + static_cast<float>(bn * 100 + bk);
  return std::make_unique<Fp8BlockLinearWeight>(storage.data(), std::move(scales), block, block, std::vector<float>{},
                                                N, K);
}

TEST(Fp8BlockAssemblyTest, FusedScalesAreRowsOfKBlocksPaddedToSixteenBytes) {
  // q 256 x 640 and k 144 x 640 (its last block partial): 5 K blocks, rows padded to 8 floats.
  std::vector<uint8_t> q_bytes, k_bytes;
  const auto q = layer(256, 640, 1000.0f, q_bytes);
  const auto k = layer(144, 640, 2000.0f, k_bytes);
  auto scales = cuda::assemble_fused_fp8_block_scales({{"q", q.get()}, {"k", k.get()}}, "qk");
  ASSERT_TRUE(scales.is_ok()) << scales.status().to_string();
  ASSERT_EQ(cuda::fp8_block_weight_scale_row(640), 8);
  const std::vector<float>& s = scales.value();
  ASSERT_EQ(s.size(), 4u * 8);  // q's 2 block rows, k's 2
  for (int bk = 0; bk < 5; ++bk) {
    EXPECT_EQ(s[0 * 8 + bk], 1000.0f + bk);
    EXPECT_EQ(s[1 * 8 + bk], 1100.0f + bk);
    EXPECT_EQ(s[2 * 8 + bk], 2000.0f + bk);
    EXPECT_EQ(s[3 * 8 + bk], 2100.0f + bk);
  }
  for (int row = 0; row < 4; ++row)
    for (int pad = 5; pad < 8; ++pad) EXPECT_EQ(s[row * 8 + pad], 0.0f);
}

TEST(Fp8BlockAssemblyTest, RefusesWhatTheBlockScaledGemmCannotRun) {
  std::vector<uint8_t> a, b;
  // 32 x 32 blocks.
  auto small_blocks = layer(256, 256, 1.0f, a, 32);
  auto refused = cuda::assemble_fused_fp8_block_scales({{"p", small_blocks.get()}}, "layer");
  ASSERT_FALSE(refused.is_ok());
  EXPECT_NE(refused.status().message().find("128 x 128 blocks only"), std::string::npos);
  // K not a multiple of 128.
  auto narrow = layer(256, 576, 1.0f, a);
  refused = cuda::assemble_fused_fp8_block_scales({{"p", narrow.get()}}, "layer");
  ASSERT_FALSE(refused.is_ok());
  EXPECT_NE(refused.status().message().find("multiple of 128"), std::string::npos);
  // A fused part other than the last ending inside a block.
  auto first = layer(192, 256, 1.0f, a);
  auto second = layer(128, 256, 1.0f, b);
  refused = cuda::assemble_fused_fp8_block_scales({{"first", first.get()}, {"second", second.get()}}, "layer");
  ASSERT_FALSE(refused.is_ok());
  EXPECT_NE(refused.status().message().find("span two fused layers"), std::string::npos);
}

}  // namespace
}  // namespace crosspoint
