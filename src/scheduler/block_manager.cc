#include "scheduler/block_manager.h"

#include <algorithm>
#include <string>

#include "common/mix64.h"
#include "common/status.h"

namespace crosspoint {
namespace {

constexpr uint64_t kChainSeed = 0x9e3779b97f4a7c15ull;

constexpr uint64_t kSaltSeed = 0xc2b2ae3d27d4eb4full;

// The parent hash of a sequence's first block: 0 without a salt, else a hash of the salt's
// bytes (so a salted first block never hashes as an unsalted one with the same tokens).
uint64_t salt_root(std::string_view salt) {
  if (salt.empty()) return 0;
  uint64_t h = mix64(kSaltSeed ^ salt.size());
  for (unsigned char c : salt) h = mix64(h ^ c);
  return h == 0 ? 1 : h;
}

}  // namespace

BlockManager::BlockManager(int32_t num_blocks, int32_t block_size, bool enable_caching)
    : num_blocks_(num_blocks),
      block_size_(block_size),
      caching_(enable_caching),
      free_pos_(std::max(num_blocks, 0)),
      ref_counts_(std::max(num_blocks, 0), 0) {
  CROSSPOINT_CHECK(num_blocks >= 0, "BlockManager: negative block count");
  CROSSPOINT_CHECK(block_size > 0, "BlockManager: block_size must be positive");
  for (int32_t b = 0; b < num_blocks; ++b) push_free(b);
  if (caching_) content_.resize(num_blocks);
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

void BlockManager::push_free(int32_t block_idx) {
  free_pos_[block_idx] = free_list_.insert(free_list_.end(), block_idx);
}

void BlockManager::remove_free(int32_t block_idx) { free_list_.erase(free_pos_[block_idx]); }

bool BlockManager::can_grow(const std::vector<int32_t>& block_table, int32_t num_tokens) const {
  const int32_t needed = blocks_for_tokens(num_tokens) - static_cast<int32_t>(block_table.size());
  return needed <= num_free_blocks();
}

void BlockManager::grow(std::vector<int32_t>& block_table, int32_t num_tokens) {
  CROSSPOINT_CHECK(can_grow(block_table, num_tokens), "BlockManager::grow without free blocks");
  const int32_t target = blocks_for_tokens(num_tokens);
  while (static_cast<int32_t>(block_table.size()) < target) {
    const int32_t block_idx = free_list_.front();
    free_list_.pop_front();
    CROSSPOINT_CHECK(ref_counts_[block_idx] == 0, "free block " + std::to_string(block_idx) + " has owners");
    if (caching_) forget(block_idx);  // evicted: it will hold new tokens
    ref_counts_[block_idx] = 1;
    block_table.push_back(block_idx);
  }
}

void BlockManager::release(std::vector<int32_t>& block_table) {
  // Released in reverse so a sequence's tail blocks (least likely to be shared) are handed
  // out again before its first ones.
  for (auto it = block_table.rbegin(); it != block_table.rend(); ++it) {
    const int32_t block_idx = *it;
    CROSSPOINT_CHECK(block_idx >= 0 && block_idx < num_blocks_ && ref_counts_[block_idx] > 0,
                     "release of block " + std::to_string(block_idx) + " that is not owned");
    if (--ref_counts_[block_idx] == 0) push_free(block_idx);
  }
  block_table.clear();
}

uint64_t BlockManager::chain_hash(uint64_t parent_hash, const int32_t* tokens) const {
  uint64_t h = mix64(parent_hash ^ kChainSeed);
  for (int32_t i = 0; i < block_size_; ++i) h = mix64(h ^ static_cast<uint32_t>(tokens[i]));
  return h;
}

void BlockManager::forget(int32_t block_idx) {
  BlockContent& c = content_[block_idx];
  if (c.registered) by_hash_.erase(c.hash);
  c = BlockContent{};
}

std::vector<int32_t> BlockManager::match_prefix(const std::vector<int32_t>& tokens, int32_t max_blocks,
                                                std::string_view salt) const {
  std::vector<int32_t> blocks;
  if (!caching_) return blocks;
  const int32_t whole = std::min<int32_t>(max_blocks, static_cast<int32_t>(tokens.size()) / block_size_);
  uint64_t parent_hash = salt_root(salt);
  int32_t parent = -1;
  for (int32_t i = 0; i < whole; ++i) {
    const int32_t* block_tokens = tokens.data() + static_cast<size_t>(i) * block_size_;
    const uint64_t h = chain_hash(parent_hash, block_tokens);
    auto it = by_hash_.find(h);
    if (it == by_hash_.end()) break;
    const BlockContent& c = content_[it->second];
    if (c.parent != parent || (parent < 0 && c.salt != salt) ||
        !std::equal(c.tokens.begin(), c.tokens.end(), block_tokens)) {
      break;
    }
    blocks.push_back(it->second);
    parent = it->second;
    parent_hash = h;
  }
  return blocks;
}

bool BlockManager::can_grow_with(const std::vector<int32_t>& cached, int32_t num_tokens) const {
  int32_t taken_from_free = 0;
  for (int32_t block_idx : cached) taken_from_free += ref_counts_[block_idx] == 0 ? 1 : 0;
  const int32_t needed = blocks_for_tokens(num_tokens) - static_cast<int32_t>(cached.size());
  return needed <= num_free_blocks() - taken_from_free;
}

void BlockManager::take_cached(std::vector<int32_t>& block_table, const std::vector<int32_t>& cached) {
  CROSSPOINT_CHECK(block_table.empty(), "take_cached into a table that holds blocks");
  for (int32_t block_idx : cached) {
    CROSSPOINT_CHECK(content_[block_idx].registered, "take_cached of an unregistered block");
    if (ref_counts_[block_idx]++ == 0) remove_free(block_idx);
    block_table.push_back(block_idx);
  }
}

int32_t BlockManager::cache_full_blocks(const std::vector<int32_t>& tokens, const std::vector<int32_t>& block_table,
                                        int32_t num_hashed_blocks, int32_t num_computed_tokens, std::string_view salt) {
  if (!caching_) return num_hashed_blocks;
  const int32_t full =
      std::min<int32_t>(std::min<int32_t>(num_computed_tokens, static_cast<int32_t>(tokens.size())) / block_size_,
                        static_cast<int32_t>(block_table.size()));
  for (int32_t i = num_hashed_blocks; i < full; ++i) {
    const int32_t block_idx = block_table[i];
    BlockContent& c = content_[block_idx];
    if (c.hashed) continue;  // taken from the cache: already describes these tokens
    const int32_t parent = i == 0 ? -1 : block_table[i - 1];
    const uint64_t parent_hash = parent < 0 ? salt_root(salt) : content_[parent].hash;
    const int32_t* block_tokens = tokens.data() + static_cast<size_t>(i) * block_size_;
    c.hash = chain_hash(parent_hash, block_tokens);
    c.parent = parent;
    if (parent < 0) c.salt = std::string(salt);
    c.tokens.assign(block_tokens, block_tokens + block_size_);
    c.hashed = true;
    c.registered = by_hash_.emplace(c.hash, block_idx).second;
  }
  return std::max(num_hashed_blocks, full);
}

}  // namespace crosspoint
