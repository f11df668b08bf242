#include "model/kv_cache.h"

#include "common/status.h"

namespace crosspoint {

CpuKvCache::CpuKvCache(const KvCacheShape& shape) : shape_(shape) {
  CROSSPOINT_CHECK(shape.num_layers > 0 && shape.num_blocks > 0 && shape.block_size > 0 && shape.num_kv_heads > 0 &&
                       shape.head_dim > 0,
                   "CpuKvCache: every dimension of the shape must be positive");
  CROSSPOINT_CHECK(shape.dtype == DType::kF32 || shape.dtype == DType::kF8E4M3,
                   "CpuKvCache: the cache holds f32 or f8_e4m3");
  const size_t per_layer =
      static_cast<size_t>(shape.num_blocks) * shape.block_size * shape.num_kv_heads * shape.head_dim;
  if (is_fp8()) {
    keys_fp8_.assign(shape.num_layers, std::vector<uint8_t>(per_layer, 0));
    values_fp8_.assign(shape.num_layers, std::vector<uint8_t>(per_layer, 0));
  } else {
    keys_.assign(shape.num_layers, std::vector<float>(per_layer, 0.0f));
    values_.assign(shape.num_layers, std::vector<float>(per_layer, 0.0f));
  }
}

float* CpuKvCache::key_block(int32_t layer_idx, int32_t block_idx) {
  CROSSPOINT_CHECK(
      !is_fp8() && layer_idx >= 0 && layer_idx < shape_.num_layers && block_idx >= 0 && block_idx < shape_.num_blocks,
      "CpuKvCache::key_block: an f32 cache's layer and block");
  return keys_[layer_idx].data() +
         static_cast<size_t>(block_idx) * shape_.block_size * shape_.num_kv_heads * shape_.head_dim;
}

float* CpuKvCache::value_block(int32_t layer_idx, int32_t block_idx) {
  CROSSPOINT_CHECK(
      !is_fp8() && layer_idx >= 0 && layer_idx < shape_.num_layers && block_idx >= 0 && block_idx < shape_.num_blocks,
      "CpuKvCache::value_block: an f32 cache's layer and block");
  return values_[layer_idx].data() +
         static_cast<size_t>(block_idx) * shape_.block_size * shape_.num_kv_heads * shape_.head_dim;
}

size_t CpuKvCache::total_bytes() const { return shape_.bytes_per_token() * shape_.num_blocks * shape_.block_size; }

}  // namespace crosspoint
