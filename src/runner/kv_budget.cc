#include "runner/kv_budget.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

namespace crosspoint {
namespace {

std::string gib(double bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f GiB", bytes / (1024.0 * 1024.0 * 1024.0));
  return text;
}

}  // namespace

Result<KvBudget> kv_budget_for_utilization(const KvBudgetInputs& in) {
  if (in.memory_budget_bytes > 0) {
    if (in.total_bytes == 0 || in.free_bytes > in.total_bytes || in.bytes_per_block == 0)
      return invalid_argument("kv budget: total, free and per-block sizes are inconsistent");
    KvBudget budget;
    budget.used_bytes = in.total_bytes - in.free_bytes;
    const double left = static_cast<double>(in.memory_budget_bytes) - static_cast<double>(in.own_bytes) -
                        static_cast<double>(in.reserve_bytes);
    const double usable = std::min(left, static_cast<double>(in.free_bytes) - static_cast<double>(in.reserve_bytes));
    budget.num_blocks = usable > 0 ? static_cast<int64_t>(usable / static_cast<double>(in.bytes_per_block)) : 0;
    if (budget.num_blocks <= 0)
      return resource_exhausted("--memory-budget " + gib(static_cast<double>(in.memory_budget_bytes)) +
                                " leaves no room for the KV cache: weights, activations and workspaces take " +
                                gib(static_cast<double>(in.own_bytes)) + ", " +
                                gib(static_cast<double>(in.reserve_bytes)) + " reserved, " +
                                gib(static_cast<double>(in.free_bytes)) + " free on the device");
    budget.kv_bytes = static_cast<size_t>(budget.num_blocks) * in.bytes_per_block;
    return budget;
  }
  if (!(in.gpu_memory_utilization > 0.0) || in.gpu_memory_utilization > 1.0)
    return invalid_argument("--gpu-memory-utilization must be in (0, 1], got " +
                            std::to_string(in.gpu_memory_utilization));
  if (in.total_bytes == 0 || in.free_bytes > in.total_bytes || in.bytes_per_block == 0)
    return invalid_argument("kv budget: total, free and per-block sizes are inconsistent");
  KvBudget budget;
  budget.used_bytes = in.total_bytes - in.free_bytes;
  const double allowed = std::floor(in.gpu_memory_utilization * static_cast<double>(in.total_bytes));
  const double left = allowed - static_cast<double>(budget.used_bytes) - static_cast<double>(in.reserve_bytes);
  // Never more than is actually free (another process may hold memory above the fraction).
  const double usable = std::min(left, static_cast<double>(in.free_bytes) - static_cast<double>(in.reserve_bytes));
  budget.num_blocks = usable > 0 ? static_cast<int64_t>(usable / static_cast<double>(in.bytes_per_block)) : 0;
  if (budget.num_blocks <= 0)
    return resource_exhausted("--gpu-memory-utilization " + std::to_string(in.gpu_memory_utilization) + " of " +
                              gib(static_cast<double>(in.total_bytes)) + " leaves no room for the KV cache: " +
                              gib(static_cast<double>(budget.used_bytes)) + " already in use (weights, activations, " +
                              "other processes), " + gib(static_cast<double>(in.reserve_bytes)) +
                              " reserved; raise the fraction or lower --max-num-batched-tokens");
  budget.kv_bytes = static_cast<size_t>(budget.num_blocks) * in.bytes_per_block;
  return budget;
}

}  // namespace crosspoint
