#include <algorithm>
#include <numeric>
#include <random>

#include "kernels/fp8.h"
#include "kernels/paged_attention.h"
#include "kernel_test_util.h"

namespace crosspoint {
namespace {

using testing::max_abs_diff;
using testing::random_floats;

// A batch of sequences with given (new tokens, context) and a shuffled block assignment.
struct Batch {
  int32_t num_heads, num_kv_heads, head_dim, block_size, num_blocks, max_blocks_per_seq;
  std::vector<int32_t> seq_token_start, seq_context_len, block_tables;
  std::vector<float> key_cache, value_cache, query, new_keys, new_values;

  Batch(std::vector<std::pair<int32_t, int32_t>> new_and_context, int32_t heads, int32_t kv_heads, int32_t dim,
        int32_t block, uint32_t seed, bool shuffle = true)
      : num_heads(heads), num_kv_heads(kv_heads), head_dim(dim), block_size(block) {
    seq_token_start.push_back(0);
    max_blocks_per_seq = 0;
    for (auto [num_new, context] : new_and_context) {
      seq_token_start.push_back(seq_token_start.back() + num_new);
      seq_context_len.push_back(context);
      max_blocks_per_seq = std::max(max_blocks_per_seq, (context + block - 1) / block);
    }
    max_blocks_per_seq += 1;  // a spare column, unused
    const int32_t num_seqs = static_cast<int32_t>(new_and_context.size());
    num_blocks = num_seqs * max_blocks_per_seq + 3;
    std::vector<int32_t> ids(num_blocks);
    std::iota(ids.begin(), ids.end(), 0);
    if (shuffle) std::shuffle(ids.begin(), ids.end(), std::mt19937(seed));
    block_tables.assign(num_seqs * max_blocks_per_seq, -1);
    for (int32_t i = 0; i < num_seqs * max_blocks_per_seq; ++i) block_tables[i] = ids[i];
    const size_t cache_elems = size_t(num_blocks) * block * kv_heads * dim;
    key_cache = random_floats(cache_elems, seed + 1);
    value_cache = random_floats(cache_elems, seed + 2);
    const int32_t tokens = seq_token_start.back();
    query = random_floats(size_t(tokens) * heads * dim, seed + 3);
    new_keys = random_floats(size_t(tokens) * kv_heads * dim, seed + 4);
    new_values = random_floats(size_t(tokens) * kv_heads * dim, seed + 5);
  }
  int32_t num_tokens() const { return seq_token_start.back(); }
  PagedKvLayout layout() {
    return {key_cache.data(),
            value_cache.data(),
            num_blocks,
            block_size,
            num_kv_heads,
            head_dim,
            block_tables.data(),
            max_blocks_per_seq,
            seq_token_start.data(),
            seq_context_len.data(),
            static_cast<int32_t>(seq_context_len.size())};
  }
  PagedAttentionArgs attention(float* out) {
    return {query.data(), 0, out, num_heads, 1.0f / std::sqrt(float(head_dim)), layout()};
  }
};

TEST(PagedAttentionTest, FastMatchesReferenceOnMixedBatch) {
  // Prefill from empty, chunked prefill, decodes, block-boundary contexts; GQA 6/2, odd dims.
  for (int32_t head_dim : {5, 16, 33}) {
    Batch b({{7, 7}, {1, 1}, {3, 20}, {1, 16}, {1, 17}, {11, 40}}, 6, 2, head_dim, 4, 100 + head_dim);
    ASSERT_TRUE(kv_cache_write({b.new_keys.data(), b.new_values.data(), 0, 0, b.layout()}).is_ok());
    std::vector<float> out(size_t(b.num_tokens()) * 6 * head_dim), out_ref(out.size());
    ASSERT_TRUE(paged_attention(b.attention(out.data())).is_ok());
    ASSERT_TRUE(paged_attention_ref(b.attention(out_ref.data())).is_ok());
    EXPECT_LE(max_abs_diff(out, out_ref), 2e-6f) << "head_dim " << head_dim;
  }
}

TEST(PagedAttentionTest, BlockPlacementDoesNotChangeTheResult) {
  // Same logical contents, contiguous vs shuffled blocks: identical outputs.
  Batch contiguous({{5, 9}, {1, 13}}, 4, 4, 8, 3, 7, /*shuffle=*/false);
  Batch shuffled = contiguous;
  std::shuffle(shuffled.block_tables.begin(), shuffled.block_tables.end(), std::mt19937(3));
  // Move each logical block's contents to its new physical place.
  const size_t block_elems = size_t(3) * 4 * 8;
  for (size_t i = 0; i < contiguous.block_tables.size(); ++i) {
    std::copy_n(contiguous.key_cache.begin() + contiguous.block_tables[i] * block_elems, block_elems,
                shuffled.key_cache.begin() + shuffled.block_tables[i] * block_elems);
    std::copy_n(contiguous.value_cache.begin() + contiguous.block_tables[i] * block_elems, block_elems,
                shuffled.value_cache.begin() + shuffled.block_tables[i] * block_elems);
  }
  std::vector<float> a(size_t(contiguous.num_tokens()) * 4 * 8), b(a.size());
  ASSERT_TRUE(paged_attention(contiguous.attention(a.data())).is_ok());
  ASSERT_TRUE(paged_attention(shuffled.attention(b.data())).is_ok());
  EXPECT_EQ(a, b);
}

TEST(PagedAttentionTest, SingleKeyReturnsItsValue) {
  // A first token sees only itself: softmax of one score is 1, output = its V.
  Batch b({{1, 1}}, 2, 1, 4, 16, 9);
  ASSERT_TRUE(kv_cache_write({b.new_keys.data(), b.new_values.data(), 0, 0, b.layout()}).is_ok());
  std::vector<float> out(2 * 4);
  ASSERT_TRUE(paged_attention(b.attention(out.data())).is_ok());
  for (int h = 0; h < 2; ++h)
    for (int d = 0; d < 4; ++d) EXPECT_FLOAT_EQ(out[h * 4 + d], b.new_values[d]);
}

TEST(PagedAttentionTest, KvCacheWriteStoresAtPositionSlots) {
  Batch b({{2, 6}}, 2, 2, 3, 4, 5);
  ASSERT_TRUE(kv_cache_write({b.new_keys.data(), b.new_values.data(), 0, 0, b.layout()}).is_ok());
  // New tokens sit at positions 4 and 5: logical block 1, slots 0 and 1.
  const int32_t block = b.block_tables[1];
  for (int t = 0; t < 2; ++t)
    for (int i = 0; i < 6; ++i) {
      EXPECT_EQ(b.key_cache[(size_t(block) * 4 + t) * 6 + i], b.new_keys[t * 6 + i]);
      EXPECT_EQ(b.value_cache[(size_t(block) * 4 + t) * 6 + i], b.new_values[t * 6 + i]);
    }
}

// The batch's cache as e4m3 bytes with per-tensor scales (the f32 pair cleared).
struct Fp8Cache {
  std::vector<uint8_t> keys, values;
  float k_scale, v_scale;
  Fp8Cache(const Batch& b, float ks, float vs) : k_scale(ks), v_scale(vs) {
    for (float x : b.key_cache) keys.push_back(f32_to_e4m3(x / ks));
    for (float x : b.value_cache) values.push_back(f32_to_e4m3(x / vs));
  }
  PagedKvLayout layout(Batch& b) {
    PagedKvLayout l = b.layout();
    l.key_cache = l.value_cache = nullptr;
    l.key_cache_fp8 = keys.data();
    l.value_cache_fp8 = values.data();
    l.k_scale = k_scale;
    l.v_scale = v_scale;
    return l;
  }
};

TEST(PagedAttentionTest, Fp8CacheWritesE4m3OfTheScaledValues) {
  Batch b({{2, 6}}, 2, 2, 3, 4, 5);
  Fp8Cache cache(b, 0.5f, 0.25f);
  ASSERT_TRUE(kv_cache_write({b.new_keys.data(), b.new_values.data(), 0, 0, cache.layout(b)}).is_ok());
  const int32_t block = b.block_tables[1];  // positions 4 and 5: logical block 1, slots 0 and 1
  for (int t = 0; t < 2; ++t)
    for (int i = 0; i < 6; ++i) {
      EXPECT_EQ(cache.keys[(size_t(block) * 4 + t) * 6 + i],
                f32_to_e4m3(round_to_f16_saturated(b.new_keys[t * 6 + i]) / 0.5f));
      EXPECT_EQ(cache.values[(size_t(block) * 4 + t) * 6 + i],
                f32_to_e4m3(round_to_f16_saturated(b.new_values[t * 6 + i]) / 0.25f));
    }
}

// The GPU writes K and V from fp16 values: 1.0625 + 2^-14 is above the e4m3 midpoint of 1 and
// 1.125 in f32 (code 0x39) but exactly on it in fp16, where the tie goes to the even code 1.0
// (0x38). The CPU cache stores the GPU's code.
TEST(PagedAttentionTest, Fp8CacheQuantisesTheFp16Value) {
  Batch b({{1, 1}}, 1, 1, 4, 4, 9);
  const float above_midpoint = 1.0625f + 1.0f / 16384.0f;
  ASSERT_EQ(f32_to_e4m3(above_midpoint), 0x39);
  for (auto* v : {&b.new_keys, &b.new_values}) std::fill(v->begin(), v->end(), above_midpoint);
  b.new_values[1] = 1e6f;  // beyond fp16: saturated to 65504, then e4m3's 448
  Fp8Cache cache(b, 1.0f, 1.0f);
  ASSERT_TRUE(kv_cache_write({b.new_keys.data(), b.new_values.data(), 0, 0, cache.layout(b)}).is_ok());
  const size_t slot = size_t(b.block_tables[0]) * 4;
  for (int i = 0; i < 4; ++i) EXPECT_EQ(cache.keys[slot * 4 + i], 0x38) << i;
  EXPECT_EQ(cache.values[slot * 4 + 0], 0x38);
  EXPECT_EQ(cache.values[slot * 4 + 1], 0x7E);
}

TEST(PagedAttentionTest, Fp8CacheFastMatchesReferenceAndStaysNearF32) {
  for (int32_t head_dim : {5, 16, 33}) {
    Batch b({{7, 7}, {1, 1}, {3, 20}, {1, 16}, {1, 17}, {11, 40}}, 6, 2, head_dim, 4, 200 + head_dim);
    ASSERT_TRUE(kv_cache_write({b.new_keys.data(), b.new_values.data(), 0, 0, b.layout()}).is_ok());
    std::vector<float> exact(size_t(b.num_tokens()) * 6 * head_dim), fast(exact.size()), ref(exact.size());
    ASSERT_TRUE(paged_attention_ref(b.attention(exact.data())).is_ok());
    Fp8Cache cache(b, 0.125f, 0.0625f);  // values in [-1, 1] land in e4m3's normal range
    PagedAttentionArgs args = b.attention(fast.data());
    args.layout = cache.layout(b);
    ASSERT_TRUE(paged_attention(args).is_ok());
    args.output = ref.data();
    ASSERT_TRUE(paged_attention_ref(args).is_ok());
    // The same dequantised values in both: only the summation order differs.
    EXPECT_LE(max_abs_diff(fast, ref), 2e-6f) << "head_dim " << head_dim;
    // e4m3 keeps 3 mantissa bits (relative error <= 1/16 per element): the outputs, weighted
    // means of values in [-1, 1], move by a few hundredths, and not by nothing.
    const float error = max_abs_diff(fast, exact);
    EXPECT_LE(error, 0.08f) << "head_dim " << head_dim;
    EXPECT_GT(error, 0.0f) << "head_dim " << head_dim;
  }
}

TEST(PagedAttentionTest, Fp8LayoutErrors) {
  Batch b({{1, 3}}, 2, 1, 4, 4, 1);
  Fp8Cache cache(b, 1.0f, 1.0f);
  std::vector<float> out(2 * 4);
  PagedAttentionArgs args = b.attention(out.data());
  args.layout.key_cache_fp8 = cache.keys.data();  // both pairs set
  args.layout.value_cache_fp8 = cache.values.data();
  Status both = paged_attention(args);
  EXPECT_EQ(both.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(both.message().find("exactly one"), std::string::npos) << both.message();
  args.layout = cache.layout(b);
  args.layout.v_scale = 0.0f;
  Status scale = paged_attention(args);
  EXPECT_EQ(scale.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(scale.message().find("positive and finite"), std::string::npos) << scale.message();
}

TEST(PagedAttentionTest, BadTablesAreErrors) {
  Batch b({{3, 5}}, 2, 1, 4, 4, 1);
  std::vector<float> out(3 * 2 * 4);
  b.block_tables[1] = b.num_blocks;  // out of range
  Status s = paged_attention(b.attention(out.data()));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("block table entry 1"), std::string::npos) << s.message();
  Batch c({{3, 2}}, 2, 1, 4, 4, 1);  // context shorter than the new tokens
  EXPECT_FALSE(paged_attention(c.attention(out.data())).is_ok());
  Batch d({{3, 5}}, 3, 2, 4, 4, 1);  // heads not a multiple of kv heads
  EXPECT_FALSE(paged_attention(d.attention(out.data())).is_ok());
}

}  // namespace
}  // namespace crosspoint
