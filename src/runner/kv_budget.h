// How many KV blocks fit under --gpu-memory-utilization, vLLM's meaning: the process may use
// that fraction of the GPU's total memory; after the weights, the measured activation and
// workspace peak, whatever else is already in use on the device, and a reserve (CUDA graphs),
// the rest goes to the KV cache. Or under --memory-budget: this process's weights, activations,
// workspaces, reserve and KV cache together stay within a number of bytes, whatever the GPU's
// size (a smaller GPU's capacity on a larger one). CudaModelRunner sizes its KV cache with it.
// Host-only arithmetic, tested without a GPU.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/status.h"

namespace crosspoint {

struct KvBudgetInputs {
  size_t total_bytes = 0;               // cudaMemGetInfo total
  size_t free_bytes = 0;                // cudaMemGetInfo free, after weights and the profile run
  double gpu_memory_utilization = 0.9;  // (0, 1]
  size_t reserve_bytes = 0;             // kept free for what comes after the KV cache (graphs)
  size_t bytes_per_block = 0;           // K and V of one block across all layers
  size_t memory_budget_bytes = 0;       // > 0: the budget, in place of the fraction
  size_t own_bytes = 0;                 // with a budget: this process's weights, activations, workspaces
};

struct KvBudget {
  size_t kv_bytes = 0;  // num_blocks * bytes_per_block
  int64_t num_blocks = 0;
  size_t used_bytes = 0;  // in use on the device before the KV cache (ours and others')
};

// Fails with a sentence giving the numbers when no block fits.
Result<KvBudget> kv_budget_for_utilization(const KvBudgetInputs& in);

}  // namespace crosspoint
