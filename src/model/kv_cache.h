// The paged KV cache: for every layer, K and V stored in fixed-size blocks of tokens. A
// sequence's tokens are found through its block table (ForwardBatch::block_tables). The
// block manager (scheduler/) decides which blocks a sequence owns; this class only holds
// the memory, and the runner owns it (CpuModelRunner; on the GPU, CudaModelRunner owns a
// CudaKvCache of the same shape, model/cuda/cuda_kv_cache.h).
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
  DType dtype = DType::kF32;  // CpuKvCache: kF32, CudaKvCache: kF16; either kF8E4M3 (--kv-cache-dtype fp8)

  // Bytes for K and V of one token across all layers, in `dtype`.
  size_t bytes_per_token(DType element) const {
    return static_cast<size_t>(num_layers) * 2 * num_kv_heads * head_dim * dtype_size(element);
  }
  size_t bytes_per_token() const { return bytes_per_token(dtype); }
};

// CPU storage. Layout per layer and per K/V: [num_blocks, block_size, num_kv_heads, head_dim]
// in f32, or in e4m3 bytes for an fp8 cache (the scales are the model's, see Model).
class CpuKvCache {
 public:
  explicit CpuKvCache(const KvCacheShape& shape);

  const KvCacheShape& shape() const { return shape_; }
  bool is_fp8() const { return shape_.dtype == DType::kF8E4M3; }
  // The start of one block of an f32 cache (checked: not for an fp8 cache).
  float* key_block(int32_t layer_idx, int32_t block_idx);
  float* value_block(int32_t layer_idx, int32_t block_idx);
  // One layer's keys or values: f32 (nullptr for an fp8 cache) or e4m3 (nullptr for f32).
  float* keys(int32_t layer_idx) { return is_fp8() ? nullptr : keys_[layer_idx].data(); }
  float* values(int32_t layer_idx) { return is_fp8() ? nullptr : values_[layer_idx].data(); }
  uint8_t* keys_fp8(int32_t layer_idx) { return is_fp8() ? keys_fp8_[layer_idx].data() : nullptr; }
  uint8_t* values_fp8(int32_t layer_idx) { return is_fp8() ? values_fp8_[layer_idx].data() : nullptr; }
  size_t total_bytes() const;

 private:
  KvCacheShape shape_;
  std::vector<std::vector<float>> keys_;  // [num_layers][num_blocks * block_size * num_kv_heads * head_dim]
  std::vector<std::vector<float>> values_;
  std::vector<std::vector<uint8_t>> keys_fp8_;  // the same, e4m3
  std::vector<std::vector<uint8_t>> values_fp8_;
};

}  // namespace crosspoint
