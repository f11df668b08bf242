// The decoder ops of kernels/cuda/decoder_ops.h against plain host loops (double math) on
// awkward sizes: odd widths take the scalar kernels, widths that are multiples of 8 the
// vector ones, and strides wider than the rows check that nothing outside a row is touched.
//
// Tolerances: every op computes in fp32 and rounds to fp16 once, so its error against the
// exact value is at most half an fp16 ulp (2^-11 relative) plus fp32 rounding (~1e-6
// relative); the tests allow 2^-10 relative (one ulp) plus a tiny absolute term for values
// near zero. Pure data movement (gather, embedding) must be bit-exact.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "common/dtype.h"
#include "kernels/cuda/decoder_ops.h"
#include "kernels/cuda/fp8_quant.h"
#include "kernels/fp8.h"
#include "kernels_cuda/reference.h"

namespace crosspoint::cuda {
namespace {

using testing::DeviceBuffer;
constexpr double kUlp16 = 1.0 / 1024;  // one fp16 ulp, relative

float h2f(uint16_t bits) { return crosspoint::f16_to_f32(bits); }

// ---- host-only argument checks (run on CPU-only CI too) ------------------------------------

TEST(DecoderOpsArgs, BadShapesAndNullPointersAreStatusErrors) {
  uint16_t* p16 = reinterpret_cast<uint16_t*>(16);
  float* pf = reinterpret_cast<float*>(16);
  int32_t* pi = reinterpret_cast<int32_t*>(16);
  EXPECT_EQ(embedding_gather(p16, pi, pf, 1, 0, 10, nullptr).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(embedding_gather(nullptr, pi, pf, 1, 8, 10, nullptr).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(embedding_gather(nullptr, nullptr, nullptr, 0, 8, 10, nullptr).is_ok());  // nothing to do
  EXPECT_EQ(add_rms_norm(pf, nullptr, 0, p16, 1e-6f, p16, 7, 1, 8, nullptr).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(add_rms_norm(pf, p16, 4, p16, 1e-6f, p16, 8, 1, 8, nullptr).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(add_rms_norm(pf, nullptr, 0, nullptr, 1e-6f, p16, 8, 1, 8, nullptr).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(silu_mul(p16, 15, p16, 8, 1, 8, nullptr).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(silu_mul(nullptr, 16, p16, 8, 1, 8, nullptr).code(), StatusCode::kInvalidArgument);
  uint8_t* p8 = reinterpret_cast<uint8_t*>(16);
  EXPECT_EQ(add_rms_norm(pf, nullptr, 0, p16, 1e-6f, p16, 8, 1, 8, nullptr, Fp8Rows{p8, 8, nullptr}).code(),
            StatusCode::kInvalidArgument);  // fp8 rows without scales
  EXPECT_EQ(silu_mul(p16, 16, p16, 8, 1, 8, nullptr, Fp8Rows{p8, 7, pf}).code(),
            StatusCode::kInvalidArgument);  // fp8 rows shorter than I
  EXPECT_EQ(gather_rows(p16, 3, pi, p16, 1, 4, nullptr).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(argmax_rows(p16, 9, pi, 1, 10, nullptr).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(argmax_rows(nullptr, 10, pi, 1, 10, nullptr).code(), StatusCode::kInvalidArgument);

  RopeKvWriteArgs rope;
  rope.qkv = p16;
  rope.positions = pi;
  rope.inv_freq = pf;
  rope.slot_mapping = pi;
  rope.key_cache = p16;
  rope.value_cache = p16;
  rope.num_tokens = 1;
  rope.num_heads = 2;
  rope.num_kv_heads = 1;
  rope.head_dim = 7;  // odd
  rope.qkv_stride = 4 * 8;
  rope.block_size = 16;
  rope.num_blocks = 1;
  Status st = rope_kv_write(rope, nullptr);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("head_dim"), std::string::npos) << st.message();
  rope.head_dim = 258;  // too large
  EXPECT_EQ(rope_kv_write(rope, nullptr).code(), StatusCode::kInvalidArgument);
  rope.head_dim = 8;
  rope.qkv_stride = 31;  // < (2 + 2) * 8
  st = rope_kv_write(rope, nullptr);
  EXPECT_NE(st.message().find("qkv_stride"), std::string::npos) << st.message();
  rope.qkv_stride = 32;
  rope.key_cache_fp8 = reinterpret_cast<uint8_t*>(16);  // both cache pairs
  rope.value_cache_fp8 = reinterpret_cast<uint8_t*>(16);
  st = rope_kv_write(rope, nullptr);
  EXPECT_NE(st.message().find("exactly one cache pair"), std::string::npos) << st.message();
  rope.key_cache = rope.value_cache = nullptr;
  rope.k_scale = -1.f;
  st = rope_kv_write(rope, nullptr);
  EXPECT_NE(st.message().find("k_scale and v_scale"), std::string::npos) << st.message();
  rope.k_scale = 1.f;
  rope.slot_mapping = nullptr;
  EXPECT_EQ(rope_kv_write(rope, nullptr).code(), StatusCode::kInvalidArgument);
}

// ---- embedding_gather ----------------------------------------------------------------------

TEST(EmbeddingGather, CopiesRowsExactly) {
  CROSSPOINT_SKIP_WITHOUT_GPU();
  std::mt19937 rng(101);
  const int vocab = 37;
  for (int d : {7, 8, 100, 3584}) {
    const auto table = testing::random_f16(rng, static_cast<size_t>(vocab) * d, -3.f, 3.f);
    const std::vector<int32_t> ids = {0, 36, 5, 5, 17, -1, 37};  // the last two are out of range
    const int t_count = static_cast<int>(ids.size());
    DeviceBuffer<uint16_t> table_dev(table);
    DeviceBuffer<int32_t> ids_dev(ids);
    DeviceBuffer<float> residual(static_cast<size_t>(t_count) * d);
    residual.poison();
    ASSERT_TRUE(embedding_gather(table_dev.get(), ids_dev.get(), residual.get(), t_count, d, vocab, nullptr).is_ok());
    const auto got = residual.download();
    for (int t = 0; t < t_count; ++t) {
      for (int i = 0; i < d; ++i) {
        const bool valid = ids[t] >= 0 && ids[t] < vocab;
        const float want = valid ? h2f(table[static_cast<size_t>(ids[t]) * d + i]) : 0.f;
        ASSERT_EQ(got[static_cast<size_t>(t) * d + i], want) << "d=" << d << " t=" << t << " i=" << i;
      }
    }
  }
}

// ---- add_rms_norm --------------------------------------------------------------------------

TEST(AddRmsNorm, MatchesReferenceWithAndWithoutDelta) {
  CROSSPOINT_SKIP_WITHOUT_GPU();
  std::mt19937 rng(102);
  std::uniform_real_distribution<float> unit(-2.f, 2.f);
  const float eps = 1e-6f;
  // Multiples of 4 up to 8192 take the register kernel (4 or 8 vectors per thread), wider
  // ones (12288) the vector loop, the rest the scalar loop.
  for (int d : {7, 100, 1000, 3584, 4096, 4098, 4100, 8192, 12288}) {
    for (int t_count : {1, 3, 17}) {
      for (bool with_delta : {true, false}) {
        const int64_t out_stride = d + (d % 4 == 0 ? 8 : 3);  // keep the vector path where it applies
        const int64_t delta_stride = d + (d % 4 == 0 ? 4 : 1);
        std::vector<float> residual(static_cast<size_t>(t_count) * d);
        for (auto& v : residual) v = unit(rng);
        const auto delta = testing::random_f16(rng, static_cast<size_t>(t_count) * delta_stride, -1.f, 1.f);
        const auto weight = testing::random_f16(rng, d, 0.5f, 1.5f);
        DeviceBuffer<float> residual_dev(residual);
        DeviceBuffer<uint16_t> delta_dev(delta), weight_dev(weight), out(static_cast<size_t>(t_count) * out_stride);
        out.poison();
        ASSERT_TRUE(add_rms_norm(residual_dev.get(), with_delta ? delta_dev.get() : nullptr, delta_stride,
                                 weight_dev.get(), eps, out.get(), out_stride, t_count, d, nullptr)
                        .is_ok());
        const auto got_residual = residual_dev.download();
        const auto got = out.download();
        for (int t = 0; t < t_count; ++t) {
          std::vector<float> r(d);
          double sum_sq = 0;
          for (int i = 0; i < d; ++i) {
            r[i] = residual[static_cast<size_t>(t) * d + i];
            if (with_delta) r[i] += h2f(delta[static_cast<size_t>(t) * delta_stride + i]);  // fp32 add, as specified
            sum_sq += static_cast<double>(r[i]) * r[i];
          }
          const double inv_rms = 1.0 / std::sqrt(sum_sq / d + eps);
          for (int i = 0; i < d; ++i) {
            ASSERT_EQ(got_residual[static_cast<size_t>(t) * d + i], r[i]) << "residual d=" << d << " t=" << t;
            const double want = r[i] * inv_rms * h2f(weight[i]);
            const double y = h2f(got[static_cast<size_t>(t) * out_stride + i]);
            ASSERT_LE(std::fabs(y - want), kUlp16 * std::fabs(want) + 1e-6)
                << "d=" << d << " t=" << t << " i=" << i << " delta=" << with_delta;
          }
          for (int64_t i = d; i < out_stride; ++i)  // the stride gap stays untouched
            ASSERT_EQ(got[static_cast<size_t>(t) * out_stride + i], 0xFFFF);
        }
      }
    }
  }
}

// ---- rope_kv_write -------------------------------------------------------------------------

struct RopeCase {
  int num_heads, num_kv_heads, head_dim;
  bool with_bias;
  int qkv_row_pad = 6;  // qkv_stride = row width + this (6: 4-byte rows; 8: 16-byte rows)
  int qkv_offset = 0;   // elements from an aligned allocation to qkv[0] (odd: 2-byte accesses only)
  std::vector<int32_t> positions = {0, 1, 17, 4000, 131071};
  std::vector<int32_t> slots = {3, -1, 16, 95, 40};  // -1: a padding row, stored nowhere
  float attention_scaling = 1.0f;                    // YaRN's factor on cos and sin
  bool fp8 = false;                                  // an e4m3 cache with kRopeKScale / kRopeVScale
};

constexpr float kRopeKScale = 0.02f;   // rotated k up to ~5 -> codes up to ~250
constexpr float kRopeVScale = 0.007f;  // v up to 2.5 -> codes up to ~360

std::string describe(const RopeCase& c) {
  return "H=" + std::to_string(c.num_heads) + " Hkv=" + std::to_string(c.num_kv_heads) +
         " D=" + std::to_string(c.head_dim) + (c.with_bias ? " bias" : "") + " pad=" + std::to_string(c.qkv_row_pad) +
         " offset=" + std::to_string(c.qkv_offset) + " T=" + std::to_string(c.positions.size()) +
         " scaling=" + std::to_string(c.attention_scaling) + (c.fp8 ? " fp8" : "");
}

// Runs rope_kv_write on random rows and checks q (rotated in place), the stored k (rotated)
// and v (copied) against fp64 rotations of the same fp32 angles, every untouched cache slot
// and every non-q column of qkv bit for bit. An fp8 cache's v bytes must be the CPU cache's
// f32_to_e4m3(fp16(v) / v_scale) exactly; its k within half an e4m3 step of the exact rotation.
void check_rope(const RopeCase& c, uint32_t seed) {
  SCOPED_TRACE(describe(c));
  std::mt19937 rng(seed);
  const int block_size = 16, num_blocks = 6;
  const std::vector<int32_t>& positions = c.positions;
  const std::vector<int32_t>& slots = c.slots;
  const int t_count = static_cast<int>(positions.size());
  const int half = c.head_dim / 2;
  const int row_width = (c.num_heads + 2 * c.num_kv_heads) * c.head_dim;
  const int64_t qkv_stride = row_width + c.qkv_row_pad;
  std::vector<float> inv_freq(half);  // HF: 1 / theta^(2i / D) in fp32
  for (int i = 0; i < half; ++i)
    inv_freq[i] = 1.0f / std::pow(1000000.0f, static_cast<float>(2 * i) / static_cast<float>(c.head_dim));
  const auto qkv = testing::random_f16(rng, static_cast<size_t>(t_count) * qkv_stride, -2.f, 2.f);
  const auto bias = testing::random_f16(rng, row_width, -0.5f, 0.5f);
  const size_t cache_count = static_cast<size_t>(num_blocks) * block_size * c.num_kv_heads * c.head_dim;
  const auto key_init = testing::random_f16(rng, cache_count, -1.f, 1.f);
  const auto value_init = testing::random_f16(rng, cache_count, -1.f, 1.f);
  const auto key_init_fp8 = testing::random_e4m3(rng, cache_count);
  const auto value_init_fp8 = testing::random_e4m3(rng, cache_count);
  std::vector<uint16_t> qkv_padded(c.qkv_offset, 0x7E00);  // NaN before the rows: never read
  qkv_padded.insert(qkv_padded.end(), qkv.begin(), qkv.end());
  DeviceBuffer<uint16_t> qkv_dev(qkv_padded), bias_dev(bias), key_dev(key_init), value_dev(value_init);
  DeviceBuffer<uint8_t> key_fp8_dev(key_init_fp8), value_fp8_dev(value_init_fp8);
  DeviceBuffer<int32_t> pos_dev(positions), slot_dev(slots);
  DeviceBuffer<float> freq_dev(inv_freq);
  RopeKvWriteArgs a;
  a.qkv = qkv_dev.get() + c.qkv_offset;
  a.qkv_stride = qkv_stride;
  a.bias = c.with_bias ? bias_dev.get() : nullptr;
  a.positions = pos_dev.get();
  a.inv_freq = freq_dev.get();
  a.slot_mapping = slot_dev.get();
  if (c.fp8) {
    a.key_cache_fp8 = key_fp8_dev.get();
    a.value_cache_fp8 = value_fp8_dev.get();
    a.k_scale = kRopeKScale;
    a.v_scale = kRopeVScale;
  } else {
    a.key_cache = key_dev.get();
    a.value_cache = value_dev.get();
  }
  a.num_tokens = t_count;
  a.num_heads = c.num_heads;
  a.num_kv_heads = c.num_kv_heads;
  a.head_dim = c.head_dim;
  a.block_size = block_size;
  a.num_blocks = num_blocks;
  a.attention_scaling = c.attention_scaling;
  const Status st = rope_kv_write(a, nullptr);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  const auto got_padded = qkv_dev.download();
  const std::vector<uint16_t> got_qkv(got_padded.begin() + c.qkv_offset, got_padded.end());
  const auto got_key = key_dev.download();
  const auto got_value = value_dev.download();
  const auto got_key_fp8 = key_fp8_dev.download();
  const auto got_value_fp8 = value_fp8_dev.download();
  auto expected_key = key_init, expected_value = value_init;  // exact parts (v, untouched slots)
  auto expected_key_fp8 = key_init_fp8, expected_value_fp8 = value_init_fp8;

  for (int t = 0; t < t_count; ++t) {
    const size_t row = static_cast<size_t>(t) * qkv_stride;
    auto biased = [&](int col) {
      return h2f(qkv[row + col]) + (c.with_bias ? h2f(bias[col]) : 0.f);  // fp32 add, as the kernel
    };
    for (int head = 0; head < c.num_heads + c.num_kv_heads; ++head) {
      for (int i = 0; i < half; ++i) {
        const int col = head * c.head_dim + i;
        const float angle = static_cast<float>(positions[t]) * inv_freq[i];  // fp32, as HF
        const double cs = std::cos(static_cast<double>(angle)) * c.attention_scaling,
                     sn = std::sin(static_cast<double>(angle)) * c.attention_scaling;
        const double x1 = biased(col), x2 = biased(col + half);
        const double want1 = x1 * cs - x2 * sn, want2 = x2 * cs + x1 * sn;
        // One fp16 rounding of a value bounded by |x1| + |x2| (the result may cancel).
        double tol = kUlp16 * c.attention_scaling * (std::fabs(x1) + std::fabs(x2)) + 1e-6;
        double got1, got2;
        if (head < c.num_heads) {
          got1 = h2f(got_qkv[row + col]);
          got2 = h2f(got_qkv[row + col + half]);
        } else {
          if (slots[t] < 0) continue;
          const size_t k = (static_cast<size_t>(slots[t]) * c.num_kv_heads + (head - c.num_heads)) * c.head_dim + i;
          if (c.fp8) {
            got1 = static_cast<double>(e4m3_to_f32(got_key_fp8[k])) * kRopeKScale;
            got2 = static_cast<double>(e4m3_to_f32(got_key_fp8[k + half])) * kRopeKScale;
            // Half an e4m3 step (2^-4 relative for normals, 2^-10 scale in the subnormal range)
            // after the fp16 rounding (2^-11 relative).
            tol = (std::fabs(want1) + std::fabs(want2)) * (1.0 / 16 + 1.0 / 2048) + kRopeKScale / 1024 + 1e-5;
            expected_key_fp8[k] = got_key_fp8[k];  // checked here against the tolerance
            expected_key_fp8[k + half] = got_key_fp8[k + half];
          } else {
            got1 = h2f(got_key[k]);
            got2 = h2f(got_key[k + half]);
            expected_key[k] = got_key[k];  // checked here against the tolerance
            expected_key[k + half] = got_key[k + half];
          }
        }
        ASSERT_LE(std::fabs(got1 - want1), tol) << "t=" << t << " head=" << head << " i=" << i;
        ASSERT_LE(std::fabs(got2 - want2), tol) << "t=" << t << " head=" << head << " i=" << i;
      }
    }
    if (slots[t] >= 0) {
      const int v_start = (c.num_heads + c.num_kv_heads) * c.head_dim;
      for (int i = 0; i < c.num_kv_heads * c.head_dim; ++i) {
        const size_t at = static_cast<size_t>(slots[t]) * c.num_kv_heads * c.head_dim + i;
        if (c.fp8) expected_value_fp8[at] = f32_to_e4m3(round_to_f16_saturated(biased(v_start + i)) / kRopeVScale);
        else expected_value[at] = crosspoint::f32_to_f16(biased(v_start + i));
      }
    }
    // k and v columns of qkv and the stride gap are left as they were.
    for (int64_t col = static_cast<int64_t>(c.num_heads) * c.head_dim; col < qkv_stride; ++col)
      ASSERT_EQ(got_qkv[row + col], qkv[row + col]) << "t=" << t << " col=" << col;
  }
  for (int i = 0; i < c.qkv_offset; ++i) ASSERT_EQ(got_padded[i], 0x7E00) << "written before qkv";
  EXPECT_EQ(got_key, expected_key) << "a slot not in slot_mapping changed";
  EXPECT_EQ(got_value, expected_value);
  EXPECT_EQ(got_key_fp8, expected_key_fp8) << "a slot not in slot_mapping changed";
  EXPECT_EQ(got_value_fp8, expected_value_fp8);
}

TEST(RopeKvWrite, RotatesQAndStoresKvInTheirSlots) {
  CROSSPOINT_SKIP_WITHOUT_GPU();
  uint32_t seed = 103;
  // 4-byte rows (pad 6): the 2-value kernel; D=10 (odd half): the scalar one.
  for (RopeCase c :
       {RopeCase{14, 2, 64, true}, RopeCase{4, 4, 128, false}, RopeCase{3, 1, 10, true}, RopeCase{28, 4, 128, true}})
    check_rope(c, seed++);
  RopeCase yarn{14, 2, 64, true};
  yarn.attention_scaling = 1.1386294f;  // YaRN's 0.1 ln(4) + 1 (Qwen2.5's factor 4)
  check_rope(yarn, seed++);
}

// The fp8 cache on each access width: 8-, 2- and 1-byte stores, with and without bias, a
// padding row.
TEST(RopeKvWrite, StoresE4m3InAnFp8Cache) {
  CROSSPOINT_SKIP_WITHOUT_GPU();
  uint32_t seed = 150;
  for (RopeCase c : {RopeCase{28, 4, 128, true, /*qkv_row_pad=*/8}, RopeCase{14, 2, 64, false},
                     RopeCase{3, 1, 10, true}, RopeCase{16, 4, 128, true, /*qkv_row_pad=*/8, /*qkv_offset=*/1}}) {
    c.fp8 = true;
    check_rope(c, seed++);
  }
}

// 16-byte rows (the 8-value kernel) at decode batches 1, 2, 3 and 8 with padding rows
// (slot -1), GQA 1:1, 4:1, 7:1 and 8:1, head_dim 64 and 128; and the same shapes with the rows
// one element off 16-byte alignment (scalar accesses).
TEST(RopeKvWrite, DecodeBatchesOnEveryAccessWidth) {
  CROSSPOINT_SKIP_WITHOUT_GPU();
  const std::vector<std::vector<int32_t>> positions = {
      {511}, {0, 4096}, {1, 17, 513}, {0, 1, 15, 16, 17, 511, 512, 32767}};
  const std::vector<std::vector<int32_t>> slots = {{40}, {-1, 7}, {0, 95, -1}, {3, 4, -1, 16, 17, 60, 61, 95}};
  struct Heads {
    int num_heads, num_kv_heads, head_dim;
  };
  uint32_t seed = 400;
  for (const Heads h : {Heads{8, 8, 128}, Heads{16, 4, 128}, Heads{28, 4, 128}, Heads{32, 4, 128}, Heads{14, 2, 64}}) {
    for (size_t b = 0; b < positions.size(); ++b) {
      for (const int offset : {0, 1}) {
        RopeCase c{h.num_heads,       h.num_kv_heads, h.head_dim,   /*with_bias=*/b % 2 == 0,
                   /*qkv_row_pad=*/8, offset,         positions[b], slots[b]};
        check_rope(c, seed++);
      }
    }
  }
}

// ---- silu_mul ------------------------------------------------------------------------------

TEST(SiluMul, MatchesReference) {
  CROSSPOINT_SKIP_WITHOUT_GPU();
  std::mt19937 rng(104);
  for (int inter : {1, 7, 8, 1000, 18944}) {
    for (int t_count : {1, 3, 9}) {
      const int64_t in_stride = 2 * inter + (inter % 8 == 0 ? 8 : 1);
      const int64_t out_stride = inter + (inter % 8 == 0 ? 16 : 3);
      const auto gate_up = testing::random_f16(rng, static_cast<size_t>(t_count) * in_stride, -8.f, 8.f);
      DeviceBuffer<uint16_t> in(gate_up), out(static_cast<size_t>(t_count) * out_stride);
      out.poison();
      ASSERT_TRUE(silu_mul(in.get(), in_stride, out.get(), out_stride, t_count, inter, nullptr).is_ok());
      const auto got = out.download();
      for (int t = 0; t < t_count; ++t) {
        for (int i = 0; i < inter; ++i) {
          const double g = h2f(gate_up[static_cast<size_t>(t) * in_stride + i]);
          const double u = h2f(gate_up[static_cast<size_t>(t) * in_stride + inter + i]);
          const double want = g / (1.0 + std::exp(-g)) * u;
          const double y = h2f(got[static_cast<size_t>(t) * out_stride + i]);
          ASSERT_LE(std::fabs(y - want), kUlp16 * std::fabs(want) + 1e-6) << "I=" << inter << " t=" << t << " i=" << i;
        }
        for (int64_t i = inter; i < out_stride; ++i) ASSERT_EQ(got[static_cast<size_t>(t) * out_stride + i], 0xFFFF);
      }
    }
  }
}

// ---- Fp8Rows: the row ops quantising their output for a W8A8 linear ---------------------------

// The e4m3 rows and scales an op wrote through Fp8Rows, and fp8_quantize_per_token's of the
// fp16 rows the same op wrote without them: must be the same bits.
void expect_same_fp8_rows(const DeviceBuffer<uint8_t>& fused_q, const DeviceBuffer<float>& fused_scale,
                          const DeviceBuffer<uint16_t>& plain_out, int64_t out_stride, int t_count, int width,
                          int64_t q_stride, const std::string& what) {
  DeviceBuffer<uint8_t> want_q(static_cast<size_t>(t_count) * q_stride);
  DeviceBuffer<float> want_scale(t_count);
  want_q.poison();
  ASSERT_TRUE(fp8_quantize_per_token(plain_out.get(), out_stride, want_q.get(), q_stride, want_scale.get(), t_count,
                                     width, nullptr)
                  .is_ok());
  const auto got_q = fused_q.download(), ref_q = want_q.download();
  const auto got_s = fused_scale.download(), ref_s = want_scale.download();
  for (int t = 0; t < t_count; ++t) {
    ASSERT_EQ(got_s[t], ref_s[t]) << what << " t=" << t;
    ASSERT_GT(got_s[t], 0.f) << what << " t=" << t;
    for (int i = 0; i < width; ++i)
      ASSERT_EQ(got_q[static_cast<size_t>(t) * q_stride + i], ref_q[static_cast<size_t>(t) * q_stride + i])
          << what << " t=" << t << " i=" << i;
    for (int64_t i = width; i < q_stride; ++i)  // the stride gap stays untouched
      ASSERT_EQ(got_q[static_cast<size_t>(t) * q_stride + i], 0xFF) << what << " t=" << t;
  }
}

TEST(AddRmsNormFp8Rows, SameBitsAsQuantisingTheOutput) {
  CROSSPOINT_SKIP_WITHOUT_GPU();
  std::mt19937 rng(106);
  std::uniform_real_distribution<float> unit(-2.f, 2.f);
  // 3584 and 8192 quantise inside the register kernels (4 and 8 vectors a thread); 7 (scalar),
  // 12288 (vector loop) and an odd q_stride take the separate quantisation launch.
  for (int d : {7, 100, 3584, 8192, 12288}) {
    for (int64_t q_pad : {4, 3}) {
      for (int t_count : {1, 5}) {
        const int64_t out_stride = d + (d % 4 == 0 ? 8 : 3), q_stride = d + q_pad;
        std::vector<float> residual(static_cast<size_t>(t_count) * d);
        for (auto& v : residual) v = unit(rng);
        const auto delta = testing::random_f16(rng, static_cast<size_t>(t_count) * d, -1.f, 1.f);
        const auto weight = testing::random_f16(rng, d, 0.5f, 1.5f);
        DeviceBuffer<float> residual_fused(residual), residual_plain(residual), scale(t_count);
        DeviceBuffer<uint16_t> delta_dev(delta), weight_dev(weight);
        DeviceBuffer<uint16_t> out_fused(static_cast<size_t>(t_count) * out_stride),
            out_plain(static_cast<size_t>(t_count) * out_stride);
        DeviceBuffer<uint8_t> q(static_cast<size_t>(t_count) * q_stride);
        q.poison();
        ASSERT_TRUE(add_rms_norm(residual_fused.get(), delta_dev.get(), d, weight_dev.get(), 1e-6f, out_fused.get(),
                                 out_stride, t_count, d, nullptr, Fp8Rows{q.get(), q_stride, scale.get()})
                        .is_ok());
        ASSERT_TRUE(add_rms_norm(residual_plain.get(), delta_dev.get(), d, weight_dev.get(), 1e-6f, out_plain.get(),
                                 out_stride, t_count, d, nullptr)
                        .is_ok());
        const std::string what = "d=" + std::to_string(d) + " q_stride=" + std::to_string(q_stride);
        ASSERT_EQ(out_fused.download(), out_plain.download()) << what;  // the fp16 output is unchanged
        ASSERT_EQ(residual_fused.download(), residual_plain.download()) << what;
        expect_same_fp8_rows(q, scale, out_plain, out_stride, t_count, d, q_stride, what);
      }
    }
  }
}

TEST(SiluMulFp8Rows, SameBitsAsQuantisingTheOutput) {
  CROSSPOINT_SKIP_WITHOUT_GPU();
  std::mt19937 rng(107);
  // On Hopper 16 (most blocks of the row's cluster without a vector), 1000, 18944 (Qwen2.5-7B)
  // and 24576 quantise in the row's cluster; 7 (scalar), 40000 (wider than a cluster holds) and
  // an odd q_stride take silu_mul and then the quantisation launch.
  for (int inter : {7, 16, 1000, 18944, 24576, 40000}) {
    for (int64_t q_pad : {8, 3}) {
      for (int t_count : {1, 3}) {
        const int64_t in_stride = 2 * inter + (inter % 8 == 0 ? 8 : 1);
        const int64_t out_stride = inter + (inter % 8 == 0 ? 16 : 3), q_stride = inter + q_pad;
        const auto gate_up = testing::random_f16(rng, static_cast<size_t>(t_count) * in_stride, -8.f, 8.f);
        DeviceBuffer<uint16_t> in(gate_up), out_fused(static_cast<size_t>(t_count) * out_stride),
            out_plain(static_cast<size_t>(t_count) * out_stride);
        DeviceBuffer<uint8_t> q(static_cast<size_t>(t_count) * q_stride);
        DeviceBuffer<float> scale(t_count);
        q.poison();
        ASSERT_TRUE(silu_mul(in.get(), in_stride, out_fused.get(), out_stride, t_count, inter, nullptr,
                             Fp8Rows{q.get(), q_stride, scale.get()})
                        .is_ok());
        ASSERT_TRUE(silu_mul(in.get(), in_stride, out_plain.get(), out_stride, t_count, inter, nullptr).is_ok());
        expect_same_fp8_rows(q, scale, out_plain, out_stride, t_count, inter, q_stride,
                             "I=" + std::to_string(inter) + " q_stride=" + std::to_string(q_stride));
      }
    }
  }
}

// ---- gather_rows ---------------------------------------------------------------------------

TEST(GatherRows, CopiesSelectedRowsExactly) {
  CROSSPOINT_SKIP_WITHOUT_GPU();
  std::mt19937 rng(105);
  for (int width : {8, 13, 3584}) {
    const int64_t in_stride = width + (width % 8 == 0 ? 8 : 5);
    const int in_rows = 11;
    const auto in = testing::random_f16(rng, static_cast<size_t>(in_rows) * in_stride, -1.f, 1.f);
    const std::vector<int32_t> rows = {10, 0, 3, 3, 7};  // out of order, repeated
    DeviceBuffer<uint16_t> in_dev(in), out(rows.size() * width);
    DeviceBuffer<int32_t> rows_dev(rows);
    out.poison();
    ASSERT_TRUE(
        gather_rows(in_dev.get(), in_stride, rows_dev.get(), out.get(), static_cast<int>(rows.size()), width, nullptr)
            .is_ok());
    const auto got = out.download();
    for (size_t r = 0; r < rows.size(); ++r)
      for (int i = 0; i < width; ++i)
        ASSERT_EQ(got[r * width + i], in[static_cast<size_t>(rows[r]) * in_stride + i]) << "width=" << width;
  }
}

// ---- argmax_rows ---------------------------------------------------------------------------

int argmax_ref(const uint16_t* row, int vocab) {
  int best = -1;
  for (int i = 0; i < vocab; ++i) {
    const float x = h2f(row[i]);
    if (std::isnan(x)) continue;
    if (best < 0 || x > h2f(row[best])) best = i;
  }
  return best < 0 ? 0 : best;
}

TEST(ArgmaxRows, LowestIndexOnTiesAndNanNeverWins) {
  CROSSPOINT_SKIP_WITHOUT_GPU();
  std::mt19937 rng(106);
  const uint16_t kNan = 0x7E00, kInf = 0x7C00, kNegInf = 0xFC00;
  for (int vocab : {1, 7, 1000, 152064}) {
    const int64_t stride = vocab + (vocab % 8 == 0 ? 8 : 1);
    const int num_rows = 6;
    auto logits = testing::random_f16(rng, static_cast<size_t>(num_rows) * stride, -10.f, 10.f);
    auto row = [&](int r) { return logits.data() + static_cast<size_t>(r) * stride; };
    // row 1: a tie of the maximum at two places (lowest index must win)
    if (vocab > 3) row(1)[vocab - 1] = row(1)[vocab / 2] = crosspoint::f32_to_f16(50.f);
    // row 2: NaN at the front and in the middle
    row(2)[0] = kNan;
    row(2)[vocab / 2] = kNan;
    // row 3: all -inf -> index 0
    std::fill(row(3), row(3) + vocab, kNegInf);
    // row 4: +inf late, NaN after it
    row(4)[vocab - 1] = kInf;
    if (vocab > 1) row(4)[vocab - 2] = kNan;
    // row 5: all NaN -> index 0
    std::fill(row(5), row(5) + vocab, kNan);
    DeviceBuffer<uint16_t> logits_dev(logits);
    DeviceBuffer<int32_t> token(num_rows);
    token.poison();
    ASSERT_TRUE(argmax_rows(logits_dev.get(), stride, token.get(), num_rows, vocab, nullptr).is_ok());
    const auto got = token.download();
    for (int r = 0; r < num_rows; ++r)
      EXPECT_EQ(got[r], argmax_ref(row(r), vocab)) << "vocab=" << vocab << " row=" << r;
    if (vocab > 3) { EXPECT_EQ(got[1], vocab / 2); }
    EXPECT_EQ(got[3], 0);
    EXPECT_EQ(got[4], vocab - 1);
    EXPECT_EQ(got[5], 0);
  }
}

}  // namespace
}  // namespace crosspoint::cuda
