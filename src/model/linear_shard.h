// One tensor-parallel rank's part of a linear layer, cut from the loaded weight in its own
// storage family (dense, FP8, block FP8, INT8, int4 groups) and run by the same CPU kernels:
// a column shard keeps output features [begin, end) (q/k/v, gate/up, lm_head), a row shard
// input features [begin, end) (o_proj, down_proj: the ranks' outputs are summed afterwards).
// Dynamic activation scales of a row shard are computed over the rank's own inputs, as vLLM's
// row-parallel layers do. An int4 row shard whose rows are not whole groups of the weight (act
// order, or a cut inside a group) keeps each row's group index and runs the reference kernel;
// its view() says so with a group_size of 0, a form the GPU kernels do not take.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "common/status.h"
#include "model/linear_weight.h"
#include "model/tensor_parallel_plan.h"

namespace crosspoint {

enum class ShardAxis {
  kOutput,  // column-parallel: a run of output features, bias sliced with them
  kInput,   // row-parallel: a run of input features, bias only where keep_bias says
};

// The shard, owning copies of its parts; errors name `name` and the block or packing the cut
// would split (FP8 blocks, 8 int4 rows to a word).
Result<std::unique_ptr<LinearWeight>> shard_linear_weight(const LinearWeight& weight, ShardAxis axis, IndexRange range,
                                                          bool keep_bias, const std::string& name);

}  // namespace crosspoint
