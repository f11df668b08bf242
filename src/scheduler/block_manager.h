// The paged KV cache's bookkeeping: a fixed number of blocks of block_size tokens, a free
// list, a reference count per block, and the growth of each sequence's block table. It
// never touches KV memory (runner/ owns that); it only decides which block holds what.
// Callers ask before they act: can_grow() then grow().
//
// Prefix caching (enable_caching): a full block whose tokens are all computed is registered
// under a hash chained over its tokens and its parent's, so a later sequence whose prompt
// starts with the same whole blocks takes those blocks (match_prefix, take_cached) instead of
// recomputing them. A registered block whose last owner lets go stays registered on the free
// list, least recently released first in line: it is reused by a match until grow() hands it
// out (evicts it) for other tokens. A match is checked against the block's tokens and its
// parent block, never the hash alone.
//
// A cache salt (the request field cache_salt, as vLLM defines it) is mixed into the hash of a
// sequence's first block and kept with it: sequences with different salts, or with and
// without one, never share a block; the same salt shares as before. Later blocks inherit the
// separation through the chain.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace crosspoint {

class BlockManager {
 public:
  BlockManager(int32_t num_blocks, int32_t block_size, bool enable_caching = false);

  // Blocks that fit in memory_bytes when one token's K and V take bytes_per_token.
  static int32_t num_blocks_for_budget(size_t memory_bytes, size_t bytes_per_token, int32_t block_size);
  // Blocks needed to hold num_tokens tokens.
  int32_t blocks_for_tokens(int32_t num_tokens) const;

  int32_t num_blocks() const { return num_blocks_; }
  int32_t block_size() const { return block_size_; }
  bool caching_enabled() const { return caching_; }
  // Blocks grow() may hand out: unowned ones, registered (cached) or not.
  int32_t num_free_blocks() const { return static_cast<int32_t>(free_list_.size()); }
  int32_t num_used_blocks() const { return num_blocks_ - num_free_blocks(); }
  // Registered blocks, owned or on the free list.
  int32_t num_cached_blocks() const { return static_cast<int32_t>(by_hash_.size()); }
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

  // Prefix caching. The registered blocks holding the longest run of tokens' whole blocks
  // from the start, at most max_blocks of them, registered under the same salt (empty
  // without caching).
  std::vector<int32_t> match_prefix(const std::vector<int32_t>& tokens, int32_t max_blocks,
                                    std::string_view salt = {}) const;
  // Whether an empty table can take `cached` (from match_prefix) and then grow to num_tokens.
  bool can_grow_with(const std::vector<int32_t>& cached, int32_t num_tokens) const;
  // Puts `cached` into the empty block_table, one reference each (a cached block on the free
  // list leaves it). Requires can_grow_with.
  void take_cached(std::vector<int32_t>& block_table, const std::vector<int32_t>& cached);
  // Registers the whole blocks of a sequence that are computed (the first
  // num_computed_tokens of tokens) from block num_hashed_blocks on; returns the new count of
  // hashed blocks for the sequence to keep. A block whose content another block already
  // holds stays unregistered (its chain still continues). salt: the sequence's cache salt.
  int32_t cache_full_blocks(const std::vector<int32_t>& tokens, const std::vector<int32_t>& block_table,
                            int32_t num_hashed_blocks, int32_t num_computed_tokens, std::string_view salt = {});

 private:
  struct BlockContent {
    uint64_t hash = 0;        // chained over the parent's hash and these tokens
    int32_t parent = -1;      // the block before it in the sequence that filled it
    bool hashed = false;      // hash, parent and tokens describe the block's content
    bool registered = false;  // by_hash_[hash] == this block
    std::vector<int32_t> tokens;
    std::string salt;  // a sequence's first block (parent -1): the salt mixed into its hash
  };
  uint64_t chain_hash(uint64_t parent_hash, const int32_t* tokens) const;
  void forget(int32_t block_idx);  // drops the block's content (it is about to hold other tokens)
  void push_free(int32_t block_idx);
  void remove_free(int32_t block_idx);

  int32_t num_blocks_;
  int32_t block_size_;
  bool caching_;
  std::list<int32_t> free_list_;                        // allocation takes the front; released blocks join the back
  std::vector<std::list<int32_t>::iterator> free_pos_;  // [num_blocks] position in free_list_
  std::vector<int32_t> ref_counts_;                     // [num_blocks] owners of each block; 0 = free
  std::vector<BlockContent> content_;                   // [num_blocks] with caching, else empty
  std::unordered_map<uint64_t, int32_t> by_hash_;
};

}  // namespace crosspoint
