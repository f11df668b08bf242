#include "model/kv_cache.h"

#include "common/status.h"

namespace crosspoint {

CpuKvCache::CpuKvCache(const KvCacheShape& shape) : shape_(shape) {
  CROSSPOINT_CHECK(shape.num_layers > 0 && shape.num_blocks > 0 && shape.block_size > 0 && shape.num_kv_heads > 0 &&
                       shape.head_dim > 0,
                   "CpuKvCache: every dimension of the shape must be positive");
  const size_t per_layer =
      static_cast<size_t>(shape.num_blocks) * shape.block_size * shape.num_kv_heads * shape.head_dim;
  keys_.resize(shape.num_layers);
  values_.resize(shape.num_layers);
  for (int32_t layer = 0; layer < shape.num_layers; ++layer) {
    keys_[layer].assign(per_layer, 0.0f);
    values_[layer].assign(per_layer, 0.0f);
  }
}

float* CpuKvCache::key_block(int32_t layer_idx, int32_t block_idx) {
  CROSSPOINT_CHECK(layer_idx >= 0 && layer_idx < shape_.num_layers && block_idx >= 0 && block_idx < shape_.num_blocks,
                   "CpuKvCache::key_block: layer or block out of range");
  return keys_[layer_idx].data() +
         static_cast<size_t>(block_idx) * shape_.block_size * shape_.num_kv_heads * shape_.head_dim;
}

float* CpuKvCache::value_block(int32_t layer_idx, int32_t block_idx) {
  CROSSPOINT_CHECK(layer_idx >= 0 && layer_idx < shape_.num_layers && block_idx >= 0 && block_idx < shape_.num_blocks,
                   "CpuKvCache::value_block: layer or block out of range");
  return values_[layer_idx].data() +
         static_cast<size_t>(block_idx) * shape_.block_size * shape_.num_kv_heads * shape_.head_dim;
}

size_t CpuKvCache::total_bytes() const {
  return shape_.bytes_per_token(DType::kF32) * shape_.num_blocks * shape_.block_size;
}

}  // namespace crosspoint
