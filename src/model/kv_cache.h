// The paged KV cache: for every layer, K and V stored in fixed-size blocks of tokens. A
// sequence's tokens are found through its block table (ForwardBatch::block_tables). The
// block manager (scheduler/) decides which blocks a sequence owns; this class only holds
// the memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/dtype.h"

namespace crosspoint {

struct KvCacheShape {
  int32_t num_layers = 0;
  int32_t num_blocks = 0;
  int32_t block_size = 16;  // tokens per block
  int32_t num_kv_heads = 0;
  int32_t head_dim = 0;

  // Bytes for K and V of one token across all layers, in `dtype`.
  size_t bytes_per_token(DType dtype) const {
    return static_cast<size_t>(num_layers) * 2 * num_kv_heads * head_dim * dtype_size(dtype);
  }
};

// CPU storage, fp32. Layout per layer and per K/V:
// [num_blocks, block_size, num_kv_heads, head_dim] f32
class CpuKvCache {
 public:
  explicit CpuKvCache(const KvCacheShape& shape);

  const KvCacheShape& shape() const { return shape_; }
  float* key_block(int32_t layer_idx, int32_t block_idx);
  float* value_block(int32_t layer_idx, int32_t block_idx);
  // [num_blocks, block_size, num_kv_heads, head_dim] f32 of one layer.
  float* keys(int32_t layer_idx) { return keys_[layer_idx].data(); }
  float* values(int32_t layer_idx) { return values_[layer_idx].data(); }
  size_t total_bytes() const;

 private:
  KvCacheShape shape_;
  std::vector<std::vector<float>> keys_;  // [num_layers][num_blocks * block_size * num_kv_heads * head_dim]
  std::vector<std::vector<float>> values_;
};

}  // namespace crosspoint
