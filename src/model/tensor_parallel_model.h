// A loaded Model split over tensor-parallel ranks that are threads of this process, each with
// its own share of the weights (model/linear_shard.h), its own KV heads and its own kernel
// threads, summing the partial outputs of o_proj and down_proj with an in-process all-reduce
// and writing its columns of the logits. The CPU counterpart of --tensor-parallel-size: it runs
// the partitioning a multi-GPU model uses, so its results can be checked against one rank.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "common/status.h"
#include "common/thread_pool.h"
#include "model/in_process_all_reduce.h"
#include "model/model.h"
#include "model/tensor_parallel_plan.h"

namespace crosspoint {

class TensorParallelModel {
 public:
  // Splits `model` (which must outlive this) over world_size ranks; kernel_threads (0: the
  // global pool's count) are divided among the ranks. Errors name what does not divide.
  static Result<std::unique_ptr<TensorParallelModel>> create(const Model& model, int32_t world_size,
                                                             int32_t kernel_threads = 0);

  // Model::forward's contract, with a cache from kv_cache_shape(). One forward at a time.
  Status forward(const ForwardBatch& batch, CpuKvCache& kv_cache, float* logits) const;

  // Every rank's KV heads of every layer in one cache: rank r's layer l is layer r * L + l.
  KvCacheShape kv_cache_shape(int32_t num_blocks, int32_t block_size, DType kv_dtype) const;
  size_t kv_bytes_per_token(DType kv_dtype) const { return kv_cache_shape(1, 1, kv_dtype).bytes_per_token(); }
  // Bytes of linear weights each rank reads per decode step (its shards and lm_head slice).
  const std::vector<size_t>& rank_linear_bytes() const { return rank_linear_bytes_; }
  int32_t world_size() const { return static_cast<int32_t>(ranks_.size()); }
  const std::vector<TensorParallelRank>& ranks() const { return ranks_; }
  // Rank r's share (its all_reduce is this process's CPU one; the CUDA model takes the share
  // with a comm of its own: CudaModelOptions::share).
  const RankShare& share(int32_t rank) const { return shares_.at(static_cast<size_t>(rank)); }
  const Model& model() const { return model_; }

 private:
  explicit TensorParallelModel(const Model& model) : model_(model) {}

  const Model& model_;
  std::vector<TensorParallelRank> ranks_;
  std::vector<std::vector<std::unique_ptr<LinearWeight>>> shards_;  // [rank] the weights shares point into
  std::vector<RankShare> shares_;
  std::vector<size_t> rank_linear_bytes_;
  std::vector<std::unique_ptr<ThreadPool>> pools_;  // [rank] kernel threads
  std::unique_ptr<InProcessAllReduce> all_reduce_;
};

}  // namespace crosspoint
