#include "model/cuda/cuda_kv_cache.h"

#include <cuda_runtime.h>

#include <string>

#include "kernels/cuda/cuda_status.h"

namespace crosspoint::cuda {

Result<CudaKvCache> CudaKvCache::allocate(const KvCacheShape& shape) {
  if (shape.dtype != DType::kF16 && shape.dtype != DType::kBF16 && shape.dtype != DType::kF8E4M3)
    return invalid_argument("cuda KV cache: fp16, bf16 or fp8 e4m3 elements");
  if (shape.num_layers <= 0 || shape.num_blocks <= 0 || shape.block_size <= 0 || shape.num_kv_heads <= 0 ||
      shape.head_dim <= 0)
    return invalid_argument("cuda KV cache: every dimension of the shape must be positive");
  if (static_cast<int64_t>(shape.num_blocks) * shape.block_size >= (int64_t{1} << 31))
    return invalid_argument("cuda KV cache: " + std::to_string(shape.num_blocks) + " blocks of " +
                            std::to_string(shape.block_size) + " tokens have more slots than int32 addresses");
  CudaKvCache cache;
  cache.shape_ = shape;
  const size_t bytes = shape.bytes_per_token() * shape.block_size * shape.num_blocks;
  CROSSPOINT_ASSIGN_OR_RETURN(cache.buffer_, DeviceBuffer::allocate(bytes, "KV cache"));
  // Zeroed so that padding rows of graph buckets read finite values.
  CROSSPOINT_CUDA_RETURN_IF_ERROR(cudaMemset(cache.buffer_.as(), 0, bytes), "cudaMemset KV cache");
  return cache;
}

}  // namespace crosspoint::cuda
