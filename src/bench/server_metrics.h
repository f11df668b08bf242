// The server's own view of a run, from its Prometheus /metrics text sampled during the
// benchmark: running batch (mean, max), waiting queue, KV cache usage, preemptions.
// Understands vLLM's names (vllm:*), the same names under crosspoint:, and SGLang's.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace crosspoint::bench {

// Prometheus text exposition -> value per metric name, summed over label sets
// (several engines). Comments, histograms' _bucket lines and unparsable lines are skipped.
std::map<std::string, double> parse_prometheus_text(std::string_view text);

// One /metrics scrape, reduced to the figures the study uses.
struct ServerMetricsSample {
  double time_s = 0;                                              // s since benchmark start
  std::optional<double> num_running;                              // requests in the running batch
  std::optional<double> num_waiting;                              // queued requests
  std::optional<double> kv_cache_usage;                           // fraction 0..1
  std::optional<double> num_preemptions;                          // cumulative counter
  std::optional<double> prefix_cache_queries, prefix_cache_hits;  // cumulative, tokens
};

ServerMetricsSample reduce_sample(const std::map<std::string, double>& values, double time_s);

// Summary over the samples taken while requests were in flight.
struct ServerMetricsSummary {
  bool available = false;  // the server answered /metrics with something we understood
  int num_samples = 0;
  double mean_running = 0, max_running = 0;
  // Mean of the samples with a request running: the batch of the decode steps, never below 1.
  std::optional<double> mean_running_while_busy;
  double mean_waiting = 0, max_waiting = 0;
  std::optional<double> mean_kv_cache_usage, max_kv_cache_usage;
  std::optional<double> num_preemptions;  // counter at the last sample minus at the first
  // Prefix cache over the run (counter deltas): prompt tokens looked up, found, and their ratio.
  std::optional<double> prefix_cache_queries, prefix_cache_hits, prefix_cache_hit_rate;
  std::string unavailable_reason;  // why available is false
};

ServerMetricsSummary summarize_server_metrics(const std::vector<ServerMetricsSample>& samples);

}  // namespace crosspoint::bench
