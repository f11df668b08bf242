#include <gtest/gtest.h>

#include "scheduler/block_manager.h"

namespace crosspoint {
namespace {

TEST(BlockManager, BlocksFromMemoryBudget) {
  // 1 MiB budget, 64 bytes per token, 16-token blocks -> 1024 blocks.
  EXPECT_EQ(BlockManager::num_blocks_for_budget(1 << 20, 64, 16), 1024);
  // A budget below one block gives none.
  EXPECT_EQ(BlockManager::num_blocks_for_budget(100, 64, 16), 0);
  EXPECT_EQ(BlockManager::num_blocks_for_budget(1 << 20, 0, 16), 0);
}

TEST(BlockManager, GrowAndReleaseReturnEveryBlock) {
  BlockManager bm(10, 4);
  EXPECT_EQ(bm.blocks_for_tokens(0), 0);
  EXPECT_EQ(bm.blocks_for_tokens(1), 1);
  EXPECT_EQ(bm.blocks_for_tokens(4), 1);
  EXPECT_EQ(bm.blocks_for_tokens(5), 2);
  std::vector<int32_t> a, b;
  ASSERT_TRUE(bm.can_grow(a, 9));
  bm.grow(a, 9);
  EXPECT_EQ(a.size(), 3u);
  bm.grow(a, 12);  // still 3 blocks
  EXPECT_EQ(a.size(), 3u);
  bm.grow(b, 28);
  EXPECT_EQ(b.size(), 7u);
  EXPECT_EQ(bm.num_free_blocks(), 0);
  EXPECT_FALSE(bm.can_grow(a, 13));
  EXPECT_TRUE(bm.can_grow(a, 12));
  EXPECT_DOUBLE_EQ(bm.usage(), 1.0);
  bm.release(b);
  EXPECT_TRUE(b.empty());
  EXPECT_EQ(bm.num_free_blocks(), 7);
  EXPECT_TRUE(bm.can_grow(a, 13));
  bm.release(a);
  EXPECT_EQ(bm.num_free_blocks(), 10);
  EXPECT_DOUBLE_EQ(bm.usage(), 0.0);
}

TEST(BlockManagerDeathTest, ReleasingAFreeBlockIsAProgrammerError) {
  BlockManager bm(2, 2);
  std::vector<int32_t> bogus = {1};
  EXPECT_DEATH(bm.release(bogus), "not owned");
}

// Two sequences: A computes 10 tokens (two whole blocks of 4 and a partial one) and registers
// its whole blocks; B, with the same first 8 tokens, finds both; after A and B let go they
// stay cached on the free list until grow() needs them, oldest released first.
TEST(BlockManager, PrefixCacheMatchesWholeBlocksAndEvictsOnlyWhenNeeded) {
  BlockManager bm(6, 4, /*enable_caching=*/true);
  const std::vector<int32_t> a_tokens = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  std::vector<int32_t> a;
  bm.grow(a, 10);
  EXPECT_TRUE(bm.match_prefix(a_tokens, 10).empty());  // nothing registered yet
  EXPECT_EQ(bm.cache_full_blocks(a_tokens, a, 0, 10), 2);
  EXPECT_EQ(bm.num_cached_blocks(), 2);
  // Another prompt with the same 8 first tokens and a different third block.
  const std::vector<int32_t> b_tokens = {1, 2, 3, 4, 5, 6, 7, 8, 42, 43, 44, 45};
  const std::vector<int32_t> hit = bm.match_prefix(b_tokens, 3);
  EXPECT_EQ(hit, (std::vector<int32_t>{a[0], a[1]}));
  EXPECT_EQ(bm.match_prefix(b_tokens, 1), (std::vector<int32_t>{a[0]}));  // capped
  // Same second block after a different first: no match (the chain, not the block alone).
  EXPECT_TRUE(bm.match_prefix({9, 9, 9, 9, 5, 6, 7, 8}, 2).empty());
  std::vector<int32_t> b;
  ASSERT_TRUE(bm.can_grow_with(hit, 12));
  bm.take_cached(b, hit);
  bm.grow(b, 12);
  EXPECT_EQ(bm.ref_count(a[0]), 2);
  EXPECT_EQ(bm.ref_count(a[1]), 2);
  EXPECT_EQ(bm.num_free_blocks(), 2);  // 6 - a's 3 - b's own third block
  bm.release(a);
  bm.release(b);
  EXPECT_EQ(bm.num_free_blocks(), 6);
  EXPECT_EQ(bm.num_cached_blocks(), 2);  // b registered nothing of its own
  // Still cached while free: a third sequence takes them from the free list.
  std::vector<int32_t> c;
  const std::vector<int32_t> again = bm.match_prefix(a_tokens, 2);
  ASSERT_EQ(again.size(), 2u);
  ASSERT_TRUE(bm.can_grow_with(again, 12));
  bm.take_cached(c, again);
  EXPECT_EQ(bm.num_free_blocks(), 4);
  bm.release(c);
  // Filling the whole cache evicts them: nothing matches afterwards.
  std::vector<int32_t> d;
  bm.grow(d, 24);
  EXPECT_EQ(bm.num_cached_blocks(), 0);
  EXPECT_TRUE(bm.match_prefix(a_tokens, 2).empty());
  bm.release(d);
  EXPECT_EQ(bm.num_free_blocks(), 6);
}

// cache_salt: the same 8 tokens computed without a salt, with salt "a" and with salt "b" are
// three separate cached prefixes; a sequence finds only the blocks of its own salt, the whole
// chain included (the second block's tokens alone match in all three).
TEST(BlockManager, CacheSaltSeparatesPrefixes) {
  BlockManager bm(12, 4, /*enable_caching=*/true);
  const std::vector<int32_t> tokens = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  std::vector<int32_t> plain, a, b;
  bm.grow(plain, 9);
  EXPECT_EQ(bm.cache_full_blocks(tokens, plain, 0, 9), 2);
  EXPECT_TRUE(bm.match_prefix(tokens, 2, "a").empty());  // unsalted blocks are not a's
  bm.grow(a, 9);
  EXPECT_EQ(bm.cache_full_blocks(tokens, a, 0, 9, "a"), 2);
  EXPECT_TRUE(bm.match_prefix(tokens, 2, "b").empty());
  bm.grow(b, 9);
  EXPECT_EQ(bm.cache_full_blocks(tokens, b, 0, 9, "b"), 2);
  EXPECT_EQ(bm.num_cached_blocks(), 6);  // three chains of two, none merged
  EXPECT_EQ(bm.match_prefix(tokens, 2), (std::vector<int32_t>{plain[0], plain[1]}));
  EXPECT_EQ(bm.match_prefix(tokens, 2, "a"), (std::vector<int32_t>{a[0], a[1]}));
  EXPECT_EQ(bm.match_prefix(tokens, 2, "b"), (std::vector<int32_t>{b[0], b[1]}));
  EXPECT_TRUE(bm.match_prefix(tokens, 2, "c").empty());
  EXPECT_TRUE(bm.match_prefix(tokens, 2, "aa").empty());
  // Free and still cached: the salt still decides, then eviction forgets it with the block.
  bm.release(plain);
  bm.release(a);
  bm.release(b);
  EXPECT_EQ(bm.match_prefix(tokens, 2, "a"), (std::vector<int32_t>{a[0], a[1]}));
  std::vector<int32_t> same_salt;
  const std::vector<int32_t> hit = bm.match_prefix(tokens, 2, "a");
  ASSERT_TRUE(bm.can_grow_with(hit, 9));
  bm.take_cached(same_salt, hit);
  bm.grow(same_salt, 9);
  EXPECT_EQ(bm.cache_full_blocks(tokens, same_salt, 2, 9, "a"), 2);
  EXPECT_EQ(bm.ref_count(hit[0]), 1);
  bm.release(same_salt);
  std::vector<int32_t> all;
  bm.grow(all, 48);
  EXPECT_EQ(bm.num_cached_blocks(), 0);
  EXPECT_TRUE(bm.match_prefix(tokens, 2, "a").empty());
  bm.release(all);
}

TEST(BlockManager, WithoutCachingNothingIsRegistered) {
  BlockManager bm(4, 2);
  std::vector<int32_t> a;
  bm.grow(a, 4);
  EXPECT_EQ(bm.cache_full_blocks({1, 2, 3, 4}, a, 0, 4), 0);
  EXPECT_TRUE(bm.match_prefix({1, 2, 3, 4}, 2).empty());
  EXPECT_EQ(bm.num_cached_blocks(), 0);
}

}  // namespace
}  // namespace crosspoint
