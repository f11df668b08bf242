// How a decoder is split over tensor-parallel ranks (Megatron-style, as vLLM splits it): each
// rank holds a contiguous run of query heads and the KV heads they read, a contiguous run of
// the MLP's intermediate columns and of the vocabulary. q/k/v and gate/up are split by output
// column, o_proj and down_proj by input row (their partial outputs summed over the ranks), and
// lm_head by vocabulary row (its slices gathered). With more ranks than KV heads, each KV head
// is replicated on world / num_kv_heads ranks, as vLLM does.
#pragma once

#include <cstdint>
#include <vector>

#include "common/status.h"
#include "formats/model_config.h"

namespace crosspoint {

struct IndexRange {
  int64_t begin = 0;
  int64_t end = 0;
  int64_t size() const { return end - begin; }
};

struct TensorParallelRank {
  int32_t rank = 0;
  int32_t world_size = 1;
  IndexRange q_heads;       // query heads [begin, end)
  IndexRange kv_heads;      // KV heads this rank holds and attends with
  IndexRange intermediate;  // MLP columns of gate/up, rows of down_proj
  IndexRange vocab;         // lm_head rows (the last rank's run may be shorter)
};

// Every rank's share of config's model, or an invalid_argument naming the size that does not
// divide (vLLM's rules: heads and intermediate divisible by world_size; KV heads divisible by
// it, or it by them).
Result<std::vector<TensorParallelRank>> plan_tensor_parallel(const ModelConfig& config, int32_t world_size);

}  // namespace crosspoint
