// How many requests fit in the KV cache at once: the worst case every engine logs
// (KV tokens ÷ max-model-len) against what the workload actually needs (KV tokens ÷ tokens
// per request, mean and percentiles), checked against what the runs reached.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace crosspoint::analysis {

struct CapacityInput {
  double kv_cache_tokens = 0;  // KV capacity reported by the server, tokens
  double max_model_len = 0;    // tokens
  int64_t block_size = 1;      // paged-KV block; each request rounds up to whole blocks
  // Tokens a request holds at its end (prompt + output), one entry per request, when known.
  std::vector<int64_t> request_tokens;
  double mean_request_tokens = 0;  // used when request_tokens is empty
  std::vector<double> percentiles = {50, 90, 99};
  // What the runs reached (any may be unknown).
  std::optional<double> observed_peak_running_batch;
  std::optional<double> observed_mean_running_batch;
  std::optional<int64_t> num_preemptions;
  std::optional<double> concurrency_cap;  // client-side max in-flight requests
};

struct PercentileCapacity {
  double percentile = 0;      // 90 -> p90 of tokens per request
  double request_tokens = 0;  // that percentile, rounded up to blocks
  double concurrency = 0;     // KV tokens ÷ request_tokens
};

struct CapacityPlan {
  double worst_case_concurrency = 0;                       // KV tokens ÷ max-model-len (vLLM's start-up line)
  double mean_request_tokens = 0;                          // rounded up to blocks per request
  double workload_concurrency = 0;                         // KV tokens ÷ mean tokens per request
  std::vector<PercentileCapacity> percentile_concurrency;  // conservative: every request at the pXX size
  // Verdict in words with the numbers, e.g. "the worst case (25.0) underestimates: ...".
  std::string verdict;
};

CapacityPlan plan_capacity(const CapacityInput& input);

// numpy.percentile(values, p) with the default "linear" method; 0 for an empty list.
double percentile_linear(std::vector<double> values, double p);

}  // namespace crosspoint::analysis
