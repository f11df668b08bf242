// The paged KV cache's bookkeeping: a fixed number of blocks of block_size tokens, a free
// list, a reference count per block, and the growth of each sequence's block table. It
// never touches KV memory (runner/ owns that); it only decides which block holds what.
// Callers ask before they act: can_grow() then grow().
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

namespace crosspoint {

class BlockManager {
 public:
  BlockManager(int32_t num_blocks, int32_t block_size);

  // Blocks that fit in memory_bytes when one token's K and V take bytes_per_token.
  static int32_t num_blocks_for_budget(size_t memory_bytes, size_t bytes_per_token, int32_t block_size);
  // Blocks needed to hold num_tokens tokens.
  int32_t blocks_for_tokens(int32_t num_tokens) const;

  int32_t num_blocks() const { return num_blocks_; }
  int32_t block_size() const { return block_size_; }
  int32_t num_free_blocks() const { return static_cast<int32_t>(free_blocks_.size()); }
  int32_t num_used_blocks() const { return num_blocks_ - num_free_blocks(); }
  // Fraction of blocks in use, 0..1 (the kv_cache_usage_perc gauge).
  double usage() const;
  int32_t ref_count(int32_t block_idx) const { return ref_counts_[block_idx]; }

  // Whether block_table can be extended to hold num_tokens tokens from free blocks.
  bool can_grow(const std::vector<int32_t>& block_table, int32_t num_tokens) const;
  // Appends free blocks to block_table until it holds num_tokens tokens. Requires can_grow.
  void grow(std::vector<int32_t>& block_table, int32_t num_tokens);
  // Drops one reference to every block of block_table (a block returns to the free list
  // when its last owner lets go) and clears the table.
  void release(std::vector<int32_t>& block_table);
  // A second table sharing every block of block_table (reference counts go up): a forked
  // sequence reads the same prefix without a copy.
  std::vector<int32_t> share(const std::vector<int32_t>& block_table);

 private:
  int32_t num_blocks_;
  int32_t block_size_;
  std::deque<int32_t> free_blocks_;  // block indices, lowest first at start
  std::vector<int32_t> ref_counts_;  // [num_blocks] owners of each block; 0 = free
};

}  // namespace crosspoint
