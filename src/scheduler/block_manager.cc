#include "scheduler/block_manager.h"

#include <string>

#include "common/status.h"

namespace crosspoint {

BlockManager::BlockManager(int32_t num_blocks, int32_t block_size)
    : num_blocks_(num_blocks), block_size_(block_size), ref_counts_(num_blocks, 0) {
  CROSSPOINT_CHECK(num_blocks >= 0, "BlockManager: negative block count");
  CROSSPOINT_CHECK(block_size > 0, "BlockManager: block_size must be positive");
  for (int32_t b = 0; b < num_blocks; ++b) free_blocks_.push_back(b);
}

int32_t BlockManager::num_blocks_for_budget(size_t memory_bytes, size_t bytes_per_token, int32_t block_size) {
  if (bytes_per_token == 0 || block_size <= 0) return 0;
  const size_t block_bytes = bytes_per_token * static_cast<size_t>(block_size);
  const size_t blocks = memory_bytes / block_bytes;
  return blocks > static_cast<size_t>(INT32_MAX) ? INT32_MAX : static_cast<int32_t>(blocks);
}

int32_t BlockManager::blocks_for_tokens(int32_t num_tokens) const {
  return num_tokens <= 0 ? 0 : (num_tokens + block_size_ - 1) / block_size_;
}

double BlockManager::usage() const {
  return num_blocks_ == 0 ? 0.0 : static_cast<double>(num_used_blocks()) / num_blocks_;
}

bool BlockManager::can_grow(const std::vector<int32_t>& block_table, int32_t num_tokens) const {
  const int32_t needed = blocks_for_tokens(num_tokens) - static_cast<int32_t>(block_table.size());
  return needed <= num_free_blocks();
}

void BlockManager::grow(std::vector<int32_t>& block_table, int32_t num_tokens) {
  CROSSPOINT_CHECK(can_grow(block_table, num_tokens), "BlockManager::grow without free blocks");
  const int32_t target = blocks_for_tokens(num_tokens);
  while (static_cast<int32_t>(block_table.size()) < target) {
    const int32_t block_idx = free_blocks_.front();
    free_blocks_.pop_front();
    CROSSPOINT_CHECK(ref_counts_[block_idx] == 0, "free block " + std::to_string(block_idx) + " has owners");
    ref_counts_[block_idx] = 1;
    block_table.push_back(block_idx);
  }
}

void BlockManager::release(std::vector<int32_t>& block_table) {
  // Released in reverse so the tail blocks (least likely to be shared) are reused last.
  for (auto it = block_table.rbegin(); it != block_table.rend(); ++it) {
    const int32_t block_idx = *it;
    CROSSPOINT_CHECK(block_idx >= 0 && block_idx < num_blocks_ && ref_counts_[block_idx] > 0,
                     "release of block " + std::to_string(block_idx) + " that is not owned");
    if (--ref_counts_[block_idx] == 0) free_blocks_.push_back(block_idx);
  }
  block_table.clear();
}

std::vector<int32_t> BlockManager::share(const std::vector<int32_t>& block_table) {
  for (int32_t block_idx : block_table) {
    CROSSPOINT_CHECK(ref_counts_[block_idx] > 0, "share of a free block " + std::to_string(block_idx));
    ++ref_counts_[block_idx];
  }
  return block_table;
}

}  // namespace crosspoint
