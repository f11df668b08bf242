// qk_head_rms_norm (Qwen3's per-head q/k norm) against a double-precision host loop: q heads with
// q_weight, k heads with k_weight, v heads and row padding untouched, head_dim 64 / 128 / 96 / 32,
// strided rows, the same bits twice; bad arguments refused before any launch (no GPU needed).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "common/dtype.h"
#include "kernels/cuda/head_rms_norm.h"
#include "kernels_cuda/reference.h"

namespace crosspoint::cuda {
namespace {

using testing::DeviceBuffer;

TEST(QkHeadRmsNorm, RefusesBadArgumentsBeforeLaunch) {
  auto* p = reinterpret_cast<uint16_t*>(16);
  const auto* w = reinterpret_cast<const uint16_t*>(16);
  EXPECT_EQ(qk_head_rms_norm(p, 512, 1, 4, 2, 130, w, w, 1e-6f, nullptr).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(qk_head_rms_norm(p, 512, 1, 4, 2, 258, w, w, 1e-6f, nullptr).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(qk_head_rms_norm(p, 700, 1, 4, 2, 128, w, w, 1e-6f, nullptr).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(qk_head_rms_norm(p, 1024, 1, 4, 2, 128, w, w, 0.f, nullptr).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(qk_head_rms_norm(nullptr, 1024, 1, 4, 2, 128, w, w, 1e-6f, nullptr).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(qk_head_rms_norm(nullptr, 1024, 0, 4, 2, 128, w, w, 1e-6f, nullptr).is_ok());  // no rows: nothing
}

TEST(QkHeadRmsNorm, MatchesReferenceAndLeavesVAlone) {
  CROSSPOINT_SKIP_WITHOUT_GPU();
  std::mt19937 rng(2026);
  struct Case {
    int tokens, q_heads, kv_heads, head_dim, pad;
  };
  for (const Case c : {Case{5, 4, 2, 64, 0}, Case{3, 28, 4, 128, 8}, Case{7, 6, 3, 96, 3}, Case{1, 2, 1, 32, 0}}) {
    const int64_t width = static_cast<int64_t>(c.q_heads + 2 * c.kv_heads) * c.head_dim, stride = width + c.pad;
    auto qkv = testing::random_f16(rng, static_cast<size_t>(c.tokens) * stride, -3.f, 3.f);
    const auto q_w = testing::random_f16(rng, c.head_dim, 0.5f, 1.5f),
               k_w = testing::random_f16(rng, c.head_dim, 0.5f, 1.5f);
    DeviceBuffer<uint16_t> dev(qkv), dq(q_w), dk(k_w);
    const float eps = 1e-6f;
    ASSERT_TRUE(qk_head_rms_norm(dev.get(), stride, c.tokens, c.q_heads, c.kv_heads, c.head_dim, dq.get(), dk.get(),
                                 eps, nullptr)
                    .is_ok());
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const auto got = dev.download();
    for (int t = 0; t < c.tokens; ++t) {
      for (int h = 0; h < c.q_heads + 2 * c.kv_heads; ++h) {
        const int64_t base = t * stride + static_cast<int64_t>(h) * c.head_dim;
        double ss = 0;
        for (int i = 0; i < c.head_dim; ++i) ss += std::pow(f16_to_f32(qkv[base + i]), 2);
        const double inv = 1.0 / std::sqrt(ss / c.head_dim + eps);
        for (int i = 0; i < c.head_dim; ++i) {
          const float in = f16_to_f32(qkv[base + i]), out = f16_to_f32(got[base + i]);
          if (h >= c.q_heads + c.kv_heads) {  // v: untouched
            ASSERT_EQ(got[base + i], qkv[base + i]) << "v head " << h;
            continue;
          }
          const double w = f16_to_f32(h < c.q_heads ? q_w[i] : k_w[i]);
          const double want = in * inv * w;
          ASSERT_NEAR(out, want, 1e-3 * std::fabs(want) + 1e-4) << "token " << t << " head " << h << " dim " << i;
        }
      }
      for (int64_t i = width; i < stride; ++i) ASSERT_EQ(got[t * stride + i], qkv[t * stride + i]) << "padding";
    }
    // Same bits on a second launch over the same input.
    DeviceBuffer<uint16_t> again(qkv);
    ASSERT_TRUE(qk_head_rms_norm(again.get(), stride, c.tokens, c.q_heads, c.kv_heads, c.head_dim, dq.get(), dk.get(),
                                 eps, nullptr)
                    .is_ok());
    EXPECT_EQ(again.download(), got);
  }
}

}  // namespace
}  // namespace crosspoint::cuda
