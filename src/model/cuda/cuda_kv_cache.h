// The paged KV cache on the GPU, beside CpuKvCache (model/kv_cache.h): one zeroed device
// allocation, per layer K then V, each [num_blocks, block_size, num_kv_heads, head_dim] in fp16
// (DType::kF16; bf16, DType::kBF16, for a model served in bf16), or e4m3 bytes for an fp8 cache (DType::kF8E4M3,
// --kv-cache-dtype fp8; the scales are the model's). Whoever runs the model owns it: the runner for the engine
// (runner/cuda/), eval and tests for their own steps; CudaModel::forward writes and reads it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/status.h"
#include "model/cuda/device_buffer.h"
#include "model/kv_cache.h"

namespace crosspoint::cuda {

class CudaKvCache {
 public:
  CudaKvCache() = default;  // empty: no blocks
  // Fails for another element type, a non-positive dimension, more slots than int32 addresses
  // (block ids and slots are int32 on the device) or too little device memory.
  static Result<CudaKvCache> allocate(const KvCacheShape& shape);

  const KvCacheShape& shape() const { return shape_; }
  bool empty() const { return buffer_.empty(); }
  bool is_fp8() const { return shape_.dtype == DType::kF8E4M3; }
  int32_t num_blocks() const { return shape_.num_blocks; }
  int32_t block_size() const { return shape_.block_size; }
  size_t bytes() const { return buffer_.bytes(); }
  // One layer's K or V: fp16 (or bf16) elements, or e4m3 bytes for an fp8 cache.
  void* key_cache(int32_t layer_idx) const {
    return buffer_.as<uint8_t>() + (static_cast<size_t>(layer_idx) * 2) * layer_bytes();
  }
  void* value_cache(int32_t layer_idx) const {
    return buffer_.as<uint8_t>() + (static_cast<size_t>(layer_idx) * 2 + 1) * layer_bytes();
  }

 private:
  // One layer's K (or V): [num_blocks, block_size, num_kv_heads, head_dim] elements.
  size_t layer_bytes() const {
    return static_cast<size_t>(shape_.num_blocks) * shape_.block_size * shape_.num_kv_heads * shape_.head_dim *
           dtype_size(shape_.dtype);
  }

  KvCacheShape shape_;
  DeviceBuffer buffer_;  // [num_layers][K | V][num_blocks, block_size, num_kv_heads, head_dim]
};

}  // namespace crosspoint::cuda
