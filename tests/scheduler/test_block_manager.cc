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

TEST(BlockManager, SharedBlocksFreeWithTheirLastOwner) {
  BlockManager bm(4, 2);
  std::vector<int32_t> a;
  bm.grow(a, 4);
  std::vector<int32_t> b = bm.share(a);
  EXPECT_EQ(b, a);
  EXPECT_EQ(bm.ref_count(a[0]), 2);
  bm.grow(b, 5);  // b gets a private third block
  EXPECT_EQ(bm.num_free_blocks(), 1);
  EXPECT_EQ(bm.ref_count(b[2]), 1);
  bm.release(a);
  EXPECT_EQ(bm.num_free_blocks(), 1);  // still held by b
  EXPECT_EQ(bm.ref_count(b[0]), 1);
  bm.release(b);
  EXPECT_EQ(bm.num_free_blocks(), 4);
}

TEST(BlockManagerDeathTest, ReleasingAFreeBlockIsAProgrammerError) {
  BlockManager bm(2, 2);
  std::vector<int32_t> bogus = {1};
  EXPECT_DEATH(bm.release(bogus), "not owned");
}

}  // namespace
}  // namespace crosspoint
