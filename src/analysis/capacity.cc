#include "analysis/capacity.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace crosspoint::analysis {

double percentile_linear(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const double position = (static_cast<double>(values.size()) - 1) * std::clamp(p, 0.0, 100.0) / 100.0;
  const size_t below = static_cast<size_t>(std::floor(position));
  if (below + 1 >= values.size()) return values.back();
  return values[below] + (position - static_cast<double>(below)) * (values[below + 1] - values[below]);
}

namespace {

double round_up_to_blocks(double tokens, int64_t block_size) {
  if (block_size <= 1) return tokens;
  const double block = static_cast<double>(block_size);
  return std::ceil(tokens / block) * block;
}

std::string make_verdict(const CapacityInput& input, const CapacityPlan& plan) {
  std::string text;
  if (!input.observed_peak_running_batch && !input.observed_mean_running_batch) {
    return fmt::format("worst case {:.1f} concurrent requests, workload-based {:.1f}; no run to check against",
                       plan.worst_case_concurrency, plan.workload_concurrency);
  }
  const double reached = input.observed_peak_running_batch.value_or(*input.observed_mean_running_batch);
  const char* reached_what = input.observed_peak_running_batch ? "peak" : "mean";
  const int64_t preemptions = input.num_preemptions.value_or(-1);
  if (reached > plan.worst_case_concurrency * 1.0001 && preemptions <= 0) {
    text = fmt::format(
        "the worst case ({:.1f}) underestimates: the run reached a {} batch of {:.1f}{}; "
        "the workload-based {:.1f} is the right order",
        plan.worst_case_concurrency, reached_what, reached, preemptions == 0 ? " with no preemption" : "",
        plan.workload_concurrency);
  } else if (preemptions > 0) {
    text = fmt::format(
        "{} preemptions at a {} batch of {:.1f}: the KV cache was the limit (workload-based {:.1f}, "
        "worst case {:.1f})",
        preemptions, reached_what, reached, plan.workload_concurrency, plan.worst_case_concurrency);
  } else {
    text = fmt::format("the run reached a {} batch of {:.1f}, within the worst case {:.1f}", reached_what, reached,
                       plan.worst_case_concurrency);
  }
  if (input.concurrency_cap && reached >= *input.concurrency_cap * 0.999) {
    text += fmt::format("; the batch was held by the client's cap of {:.0f}, not by KV memory", *input.concurrency_cap);
  } else if (input.concurrency_cap && preemptions <= 0 && *input.concurrency_cap < plan.workload_concurrency) {
    text += fmt::format(
        "; the cap of {:.0f} in-flight requests is below the workload-based capacity, so the "
        "KV cache was never the limit",
        *input.concurrency_cap);
  }
  return text;
}

}  // namespace

CapacityPlan plan_capacity(const CapacityInput& input) {
  CapacityPlan plan;
  if (input.max_model_len > 0) plan.worst_case_concurrency = input.kv_cache_tokens / input.max_model_len;
  std::vector<double> tokens;
  for (int64_t t : input.request_tokens) tokens.push_back(round_up_to_blocks(static_cast<double>(t), input.block_size));
  if (!tokens.empty()) {
    double sum = 0;
    for (double t : tokens) sum += t;
    plan.mean_request_tokens = sum / static_cast<double>(tokens.size());
  } else {
    // Without the distribution, rounding up adds half a block on average.
    plan.mean_request_tokens =
        input.mean_request_tokens + (input.block_size > 1 ? static_cast<double>(input.block_size) / 2 : 0);
  }
  if (plan.mean_request_tokens > 0) plan.workload_concurrency = input.kv_cache_tokens / plan.mean_request_tokens;
  if (!tokens.empty()) {
    for (double p : input.percentiles) {
      PercentileCapacity entry;
      entry.percentile = p;
      entry.request_tokens = round_up_to_blocks(percentile_linear(tokens, p), input.block_size);
      entry.concurrency = entry.request_tokens > 0 ? input.kv_cache_tokens / entry.request_tokens : 0;
      plan.percentile_concurrency.push_back(entry);
    }
  }
  plan.verdict = make_verdict(input, plan);
  return plan;
}

}  // namespace crosspoint::analysis
