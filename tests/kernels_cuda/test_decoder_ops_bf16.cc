// The bf16 instances of the decoder ops, the q/k head norm, the dense GEMM and sampling's
// order key (dtype kBF16: a bf16 model served with --dtype bfloat16) against plain host loops
// (double math) at odd widths (scalar kernels) and multiples of 8 (vector kernels).
//
// Tolerance: each op computes in fp32 and rounds to bf16 once: half a bf16 ulp (2^-8 relative)
// plus fp32 rounding; the tests allow one ulp (2^-7 relative) plus a tiny absolute term. Data
// movement must be bit-exact. A wrong dtype shows at once: a bf16 value read as fp16 is off by
// orders of magnitude (bf16 1.0 is 0x3F80, fp16 1.875).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "common/dtype.h"
#include "kernels/cuda/cublaslt_gemm.h"
#include "kernels/cuda/decoder_ops.h"
#include "kernels/cuda/gemv.h"
#include "kernels/cuda/head_rms_norm.h"
#include "kernels/cuda/linear.h"
#include "kernels/cuda/sampling.h"
#include "kernels/cuda/sampling_reference.h"
#include "kernels_cuda/reference.h"

namespace crosspoint::cuda {
namespace {

using testing::DeviceBuffer;
constexpr double kUlpBf16 = 1.0 / 128;  // one bf16 ulp, relative

float b2f(uint16_t bits) { return crosspoint::bf16_to_f32(bits); }

std::vector<uint16_t> random_bf16(std::mt19937& rng, size_t count, float lo, float hi) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<uint16_t> out(count);
  for (uint16_t& v : out) v = crosspoint::f32_to_bf16(dist(rng));
  return out;
}

void expect_near_bf16(uint16_t got, double want, const std::string& where) {
  const double tol = std::fabs(want) * kUlpBf16 + 1e-6;
  EXPECT_LE(std::fabs(b2f(got) - want), tol) << where << ": got " << b2f(got) << " want " << want;
}

TEST(DecoderOpsBf16Args, OtherDtypesAndFp8OutputsAreRefused) {
  uint16_t* p16 = reinterpret_cast<uint16_t*>(16);
  float* pf = reinterpret_cast<float*>(16);
  int32_t* pi = reinterpret_cast<int32_t*>(16);
  uint8_t* p8 = reinterpret_cast<uint8_t*>(16);
  Status st = add_rms_norm(pf, nullptr, 0, p16, 1e-6f, p16, 8, 1, 8, nullptr, {}, DType::kF32);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("float16 or bfloat16"), std::string::npos) << st.message();
  st = add_rms_norm(pf, nullptr, 0, p16, 1e-6f, p16, 8, 1, 8, nullptr, Fp8Rows{p8, 8, pf}, DType::kBF16);
  EXPECT_NE(st.message().find("fp8 rows"), std::string::npos) << st.message();
  st = silu_mul(p16, 16, p16, 8, 1, 8, nullptr, Fp8Rows{p8, 8, pf}, DType::kBF16);
  EXPECT_NE(st.message().find("fp8 rows"), std::string::npos) << st.message();
  EXPECT_EQ(embedding_gather(p16, pi, pf, 1, 8, 10, nullptr, DType::kF8E4M3).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(argmax_rows(p16, 10, pi, 1, 10, nullptr, DType::kF32).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(qk_head_rms_norm(p16, 64, 1, 2, 1, 16, p16, p16, 1e-6f, nullptr, DType::kI8).code(),
            StatusCode::kInvalidArgument);
  RopeKvWriteArgs rope;
  rope.qkv = p16;
  rope.positions = pi;
  rope.inv_freq = pf;
  rope.slot_mapping = pi;
  rope.key_cache_fp8 = p8;
  rope.value_cache_fp8 = p8;
  rope.num_tokens = 1;
  rope.num_heads = 2;
  rope.num_kv_heads = 1;
  rope.head_dim = 8;
  rope.qkv_stride = 32;
  rope.block_size = 16;
  rope.num_blocks = 1;
  rope.dtype = DType::kBF16;
  st = rope_kv_write(rope, nullptr);
  EXPECT_NE(st.message().find("fp8 cache"), std::string::npos) << st.message();
}

// bf16's NaN boundary (0x7F80) is not fp16's (0x7C00): 0x7C01 is a finite bf16 logit.
TEST(SamplingOrderKeyBf16, NanAndOrderFollowBf16) {
  uint32_t key = 0, other = 0;
  EXPECT_FALSE(sampling_order_key(0x7C01, &key));         // fp16 NaN
  EXPECT_TRUE(sampling_order_key(0x7C01, &key, true));    // bf16 4.3e37
  EXPECT_TRUE(sampling_order_key(0x7F80, &other, true));  // bf16 +inf
  EXPECT_LT(key, other);
  EXPECT_FALSE(sampling_order_key(0x7FC0, &key, true));  // bf16 NaN
  EXPECT_FALSE(sampling_order_key(0xFFC0, &key, true));
  ASSERT_TRUE(sampling_order_key(crosspoint::f32_to_bf16(-2.0f), &key, true));
  ASSERT_TRUE(sampling_order_key(crosspoint::f32_to_bf16(1.5f), &other, true));
  EXPECT_LT(key, other);
  EXPECT_EQ(b2f(sampling_key_bits(other)), 1.5f);
}

TEST(DecoderOpsBf16, EmbeddingNormSiluAndArgmaxMatchTheHost) {
  CROSSPOINT_SKIP_WITHOUT_GPU();
  std::mt19937 rng(901);
  for (int d : {7, 8, 136, 3584}) {
    SCOPED_TRACE("d=" + std::to_string(d));
    const int vocab = 11, t_count = 3;
    const auto table = random_bf16(rng, static_cast<size_t>(vocab) * d, -3.f, 3.f);
    const std::vector<int32_t> ids = {0, 10, 4};
    DeviceBuffer<uint16_t> table_dev(table);
    DeviceBuffer<int32_t> ids_dev(ids);
    DeviceBuffer<float> residual(static_cast<size_t>(t_count) * d);
    ASSERT_TRUE(
        embedding_gather(table_dev.get(), ids_dev.get(), residual.get(), t_count, d, vocab, nullptr, DType::kBF16)
            .is_ok());
    std::vector<float> res = residual.download();
    for (int t = 0; t < t_count; ++t)
      for (int i = 0; i < d; ++i)
        ASSERT_EQ(res[static_cast<size_t>(t) * d + i], b2f(table[static_cast<size_t>(ids[t]) * d + i]));

    // add_rms_norm: residual += delta, out = norm(residual) * weight.
    const auto delta = random_bf16(rng, static_cast<size_t>(t_count) * d, -2.f, 2.f);
    const auto weight = random_bf16(rng, d, 0.5f, 1.5f);
    DeviceBuffer<uint16_t> delta_dev(delta), weight_dev(weight), out(static_cast<size_t>(t_count) * d);
    ASSERT_TRUE(add_rms_norm(residual.get(), delta_dev.get(), d, weight_dev.get(), 1e-6f, out.get(), d, t_count, d,
                             nullptr, {}, DType::kBF16)
                    .is_ok());
    const auto normed = out.download();
    for (int t = 0; t < t_count; ++t) {
      double sum_sq = 0;
      std::vector<double> r(d);
      for (int i = 0; i < d; ++i) {
        r[i] = static_cast<double>(res[static_cast<size_t>(t) * d + i]) + b2f(delta[static_cast<size_t>(t) * d + i]);
        sum_sq += r[i] * r[i];
      }
      const double inv = 1.0 / std::sqrt(sum_sq / d + 1e-6);
      for (int i = 0; i < d; ++i)
        expect_near_bf16(normed[static_cast<size_t>(t) * d + i], r[i] * inv * b2f(weight[i]),
                         "norm t=" + std::to_string(t) + " i=" + std::to_string(i));
    }

    // silu_mul over [gate | up] rows of width d each.
    const auto gate_up = random_bf16(rng, static_cast<size_t>(t_count) * 2 * d, -4.f, 4.f);
    DeviceBuffer<uint16_t> gate_up_dev(gate_up), act(static_cast<size_t>(t_count) * d);
    ASSERT_TRUE(silu_mul(gate_up_dev.get(), 2 * d, act.get(), d, t_count, d, nullptr, {}, DType::kBF16).is_ok());
    const auto acts = act.download();
    for (int t = 0; t < t_count; ++t)
      for (int i = 0; i < d; ++i) {
        const double g = b2f(gate_up[static_cast<size_t>(t) * 2 * d + i]);
        const double u = b2f(gate_up[static_cast<size_t>(t) * 2 * d + d + i]);
        expect_near_bf16(acts[static_cast<size_t>(t) * d + i], g / (1.0 + std::exp(-g)) * u,
                         "silu t=" + std::to_string(t) + " i=" + std::to_string(i));
      }

    // argmax: a bf16 NaN (0x7FC0) never wins; 0x7C01 (a NaN to fp16) is bf16's largest here.
    std::vector<uint16_t> logits = random_bf16(rng, static_cast<size_t>(2) * d, -5.f, 5.f);
    logits[0] = 0x7FC0;
    logits[d - 1] = 0x7C01;
    logits[d] = crosspoint::f32_to_bf16(9.0f);
    DeviceBuffer<uint16_t> logits_dev(logits);
    DeviceBuffer<int32_t> tokens(2);
    ASSERT_TRUE(argmax_rows(logits_dev.get(), d, tokens.get(), 2, d, nullptr, DType::kBF16).is_ok());
    const auto got = tokens.download();
    EXPECT_EQ(got[0], d - 1);
    EXPECT_EQ(got[1], 0);
  }
}

// rope_kv_write on a bf16 row (bias, Qwen2-style) and qk_head_rms_norm (Qwen3-style) on another.
TEST(DecoderOpsBf16, RopeKvWriteAndHeadNormMatchTheHost) {
  CROSSPOINT_SKIP_WITHOUT_GPU();
  std::mt19937 rng(902);
  const int H = 4, Hkv = 2, D = 64, half = D / 2, width = (H + 2 * Hkv) * D, block_size = 16, num_blocks = 2;
  const auto qkv = random_bf16(rng, width, -2.f, 2.f);
  const auto bias = random_bf16(rng, width, -0.5f, 0.5f);
  std::vector<float> inv_freq(half);
  for (int i = 0; i < half; ++i) inv_freq[i] = 1.0f / std::pow(10000.0f, static_cast<float>(2 * i) / D);
  const int32_t position = 37, slot = 21;
  DeviceBuffer<uint16_t> qkv_dev(qkv), bias_dev(bias);
  DeviceBuffer<uint16_t> key(static_cast<size_t>(num_blocks) * block_size * Hkv * D),
      value(static_cast<size_t>(num_blocks) * block_size * Hkv * D);
  DeviceBuffer<int32_t> pos_dev(std::vector<int32_t>{position}), slot_dev(std::vector<int32_t>{slot});
  DeviceBuffer<float> freq_dev(inv_freq);
  RopeKvWriteArgs a;
  a.qkv = qkv_dev.get();
  a.qkv_stride = width;
  a.bias = bias_dev.get();
  a.positions = pos_dev.get();
  a.inv_freq = freq_dev.get();
  a.slot_mapping = slot_dev.get();
  a.key_cache = key.get();
  a.value_cache = value.get();
  a.num_tokens = 1;
  a.num_heads = H;
  a.num_kv_heads = Hkv;
  a.head_dim = D;
  a.block_size = block_size;
  a.num_blocks = num_blocks;
  a.dtype = DType::kBF16;
  ASSERT_TRUE(rope_kv_write(a, nullptr).is_ok());
  const auto q_out = qkv_dev.download(), k_out = key.download(), v_out = value.download();
  auto rotated = [&](int col, int i, bool second) {
    const double x1 = static_cast<double>(b2f(qkv[col + i])) + b2f(bias[col + i]);
    const double x2 = static_cast<double>(b2f(qkv[col + i + half])) + b2f(bias[col + i + half]);
    const float angle = static_cast<float>(position) * inv_freq[i];
    const double c = std::cos(static_cast<double>(angle)), s = std::sin(static_cast<double>(angle));
    return second ? x2 * c + x1 * s : x1 * c - x2 * s;
  };
  for (int h = 0; h < H + Hkv; ++h)
    for (int i = 0; i < half; ++i) {
      const int col = h * D;
      const bool is_q = h < H;
      const size_t k_at = static_cast<size_t>(slot) * Hkv * D + (h - H) * D;
      expect_near_bf16(is_q ? q_out[col + i] : k_out[k_at + i], rotated(col, i, false), "head " + std::to_string(h));
      expect_near_bf16(is_q ? q_out[col + i + half] : k_out[k_at + i + half], rotated(col, i, true),
                       "head " + std::to_string(h));
    }
  for (int i = 0; i < Hkv * D; ++i) {
    const int col = (H + Hkv) * D + i;
    expect_near_bf16(v_out[static_cast<size_t>(slot) * Hkv * D + i],
                     static_cast<double>(b2f(qkv[col])) + b2f(bias[col]), "v " + std::to_string(i));
  }

  // Per-head RMSNorm of the q and k heads in place; v untouched.
  const auto row = random_bf16(rng, width, -3.f, 3.f);
  const auto q_w = random_bf16(rng, D, 0.5f, 1.5f), k_w = random_bf16(rng, D, 0.5f, 1.5f);
  DeviceBuffer<uint16_t> row_dev(row), q_w_dev(q_w), k_w_dev(k_w);
  ASSERT_TRUE(
      qk_head_rms_norm(row_dev.get(), width, 1, H, Hkv, D, q_w_dev.get(), k_w_dev.get(), 1e-6f, nullptr, DType::kBF16)
          .is_ok());
  const auto normed = row_dev.download();
  for (int h = 0; h < H + Hkv; ++h) {
    double sum_sq = 0;
    for (int i = 0; i < D; ++i) sum_sq += static_cast<double>(b2f(row[h * D + i])) * b2f(row[h * D + i]);
    const double inv = 1.0 / std::sqrt(sum_sq / D + 1e-6);
    const auto& w = h < H ? q_w : k_w;
    for (int i = 0; i < D; ++i)
      expect_near_bf16(normed[h * D + i], b2f(row[h * D + i]) * inv * b2f(w[i]), "head norm " + std::to_string(h));
  }
  for (int i = (H + Hkv) * D; i < width; ++i) EXPECT_EQ(normed[i], row[i]);
}

// sample_rows on bf16 logits: top-k 1 keeps the largest bf16 value, which 0x7C01 is here (an fp16
// NaN, never a candidate if the row were read as fp16); a bf16 NaN is never drawn.
TEST(SampleRowsBf16, ReadsTheLogitsAsBf16) {
  CROSSPOINT_SKIP_WITHOUT_GPU();
  std::mt19937 rng(904);
  const int vocab = 1000;
  std::vector<uint16_t> logits = random_bf16(rng, static_cast<size_t>(2) * vocab, -5.f, 5.f);
  logits[123] = 0x7C01;        // bf16 4.3e37
  logits[vocab + 7] = 0x7FC0;  // bf16 NaN
  logits[vocab + 500] = crosspoint::f32_to_bf16(50.f);
  std::vector<SampledRowParams> params(2);
  params[0].logits_row = 0;
  params[0].top_k = 1;
  params[0].uniform = 0.5f;
  params[1].logits_row = 1;
  params[1].temperature = 0.5f;  // 50 against at most 5: the draw is row 1's maximum unless u rounds to 1
  params[1].uniform = 0.999f;
  DeviceBuffer<uint16_t> logits_dev(logits);
  DeviceBuffer<SampledRowParams> params_dev(params);
  DeviceBuffer<int32_t> tokens(2);
  ASSERT_TRUE(
      sample_rows(logits_dev.get(), vocab, 2, params_dev.get(), 2, tokens.get(), vocab, nullptr, DType::kBF16).is_ok());
  const auto got = tokens.download();
  EXPECT_EQ(got[0], 123);
  EXPECT_EQ(got[1], 500);
}

// y = x w^T of bf16 rows against a double-precision product: fp32 accumulation over k terms,
// then one bf16 rounding.
void expect_bf16_product(const std::vector<uint16_t>& got, const std::vector<uint16_t>& x,
                         const std::vector<uint16_t>& w, int m, int n, int k, const std::string& where) {
  ASSERT_EQ(got.size(), static_cast<size_t>(m) * n);
  for (int r = 0; r < m; ++r)
    for (int c = 0; c < n; ++c) {
      double want = 0, scale = 0;
      for (int i = 0; i < k; ++i) {
        const double p = static_cast<double>(b2f(x[r * k + i])) * b2f(w[c * k + i]);
        want += p;
        scale += std::fabs(p);
      }
      ASSERT_LE(std::fabs(b2f(got[r * n + c]) - want), std::fabs(want) * kUlpBf16 + scale * 1e-5)
          << where << " r=" << r << " c=" << c;
    }
}

// cuBLASLt's bf16 GEMM (the dense linears of a bf16 model) against a double-precision product.
TEST(DenseGemmBf16, CublasLtMatchesTheHost) {
  CROSSPOINT_SKIP_WITHOUT_GPU();
  std::mt19937 rng(903);
  auto ctx = CublasLtContext::create();
  ASSERT_TRUE(ctx.is_ok()) << ctx.status().to_string();
  for (int m : {1, 5, 64}) {
    const int n = 136, k = 520;
    const auto x = random_bf16(rng, static_cast<size_t>(m) * k, -1.f, 1.f);
    const auto w = random_bf16(rng, static_cast<size_t>(n) * k, -1.f, 1.f);
    DeviceBuffer<uint16_t> x_dev(x), w_dev(w), y(static_cast<size_t>(m) * n);
    ASSERT_TRUE(
        fp16_gemm_cublaslt(*ctx.value(), x_dev.get(), k, w_dev.get(), k, y.get(), n, m, n, k, nullptr, DType::kBF16)
            .is_ok());
    expect_bf16_product(y.download(), x, w, m, n, k, "m=" + std::to_string(m));
  }
}

// The hand GEMV's bf16 instantiation at every K split, and fp16_linear's dispatch of one bf16
// row to it (values that read as fp16 would be far off: see the file comment). cuBLASLt's
// rows are the test above's: at k = 18,944 its bf16 results went past this test's bound (by
// about two bf16 ulps where it allows 1.7, H100).
TEST(DenseGemmBf16, GemvMatchesTheHostAtEveryKSplit) {
  CROSSPOINT_SKIP_WITHOUT_GPU();
  std::mt19937 rng(904);
  auto ctx = CublasLtContext::create();
  ASSERT_TRUE(ctx.is_ok()) << ctx.status().to_string();
  for (int m : {1, 3, 8}) {
    for (auto [n, k] : {std::pair{37, 360}, {136, 3584}, {70, 18944}}) {
      const auto x = random_bf16(rng, static_cast<size_t>(m) * k, -1.f, 1.f);
      const auto w = random_bf16(rng, static_cast<size_t>(n) * k, -1.f, 1.f);
      DeviceBuffer<uint16_t> x_dev(x), w_dev(w), y(static_cast<size_t>(m) * n);
      const std::string shape = "m=" + std::to_string(m) + " n=" + std::to_string(n) + " k=" + std::to_string(k);
      for (int splits : {0, 1, 2, 4, 8}) {
        y.poison();
        const Status st = fp16_gemv(x_dev.get(), k, w_dev.get(), k, y.get(), n, m, n, k, nullptr, splits, DType::kBF16);
        ASSERT_TRUE(st.is_ok()) << st.to_string();
        expect_bf16_product(y.download(), x, w, m, n, k, shape + " k_splits=" + std::to_string(splits));
      }
      if (m > kFp16GemvMaxRows) continue;  // cuBLASLt's rows: the test above
      y.poison();
      ASSERT_TRUE(fp16_linear(*ctx.value(), x_dev.get(), k, w_dev.get(), k, y.get(), n, m, n, k, nullptr, DType::kBF16)
                      .is_ok());
      expect_bf16_product(y.download(), x, w, m, n, k, shape + " fp16_linear");
    }
  }
  EXPECT_EQ(fp16_gemv(nullptr, 16, nullptr, 16, nullptr, 4, 1, 4, 16, nullptr, 0, DType::kF32).code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace crosspoint::cuda
