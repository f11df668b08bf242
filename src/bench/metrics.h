// The numbers of `vllm bench serve` (calculate_metrics in vllm/benchmarks/serve.py),
// computed from per-request records: TTFT, TPOT, ITL, E2EL statistics in ms, throughputs,
// goodput under SLOs, peak output tokens per second and peak concurrency.
// Definitions: docs/bench.md and shared/docs/reference/serving-benchmark.md.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bench/request_record.h"

namespace crosspoint::bench {

// numpy defaults: mean, median, population std (ddof 0), percentile with linear
// interpolation. Empty input counts as [0], as vLLM's `x or 0` does.
double mean_of(const std::vector<double>& values);
double median_of(const std::vector<double>& values);
double std_of(const std::vector<double>& values);
double percentile_of(const std::vector<double>& values, double p);  // p in [0, 100]

// Service-level objectives for goodput, in ms; unset ones are not checked.
struct GoodputSlos {
  std::optional<double> ttft_ms;
  std::optional<double> tpot_ms;
  std::optional<double> e2el_ms;
  bool any() const { return ttft_ms || tpot_ms || e2el_ms; }
};

// mean/median/std and the chosen percentiles of one metric, in ms.
struct MetricStats {
  double mean_ms = 0;
  double median_ms = 0;
  double std_ms = 0;
  std::vector<std::pair<double, double>> percentiles_ms;  // (p, value)
};

MetricStats compute_stats(const std::vector<double>& values_s, const std::vector<double>& percentiles);

// "99" for 99.0, "99.9" for 99.9: the text vLLM puts in p<P>_<metric>_ms keys.
std::string percentile_key_text(double p);

struct BenchMetrics {
  int completed = 0;
  int failed = 0;
  long long total_input_tokens = 0;    // sum prompt_len over successful requests
  long long total_output_tokens = 0;   // sum output_len over successful requests
  double request_throughput = 0;       // completed / duration, req/s
  int good_requests = 0;               // completed requests meeting every SLO
  double request_goodput = 0;          // good_requests / duration, req/s
  double output_throughput = 0;        // tok/s
  double total_token_throughput = 0;   // (input + output) tok/s
  double max_output_tokens_per_s = 0;  // busiest 1 s bucket of token events
  int max_concurrent_requests = 0;     // peak overlap of [start, start + latency)
  MetricStats ttft, tpot, itl, e2el;
  std::vector<bool> is_good;   // per record: success and within every SLO
  std::vector<double> tpot_s;  // per record: TPOT used for goodput (0 when <= 1 token)
};

// Records must have output_len already resolved. duration_s > 0.
BenchMetrics compute_metrics(const std::vector<RequestRecord>& records, double duration_s,
                             const std::vector<double>& percentiles, const GoodputSlos& slos);

}  // namespace crosspoint::bench
