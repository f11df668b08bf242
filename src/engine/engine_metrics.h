// Counters, gauges and histograms the engine keeps about itself, exported by the server as
// Prometheus text (names as vLLM's). Plain data; Engine::metrics() returns a copy.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace crosspoint {

// Cumulative histogram as Prometheus defines it: bucket_counts[i] counts observations
// <= upper_bounds[i]; the +Inf bucket is count.
struct Histogram {
  std::vector<double> upper_bounds;
  std::vector<uint64_t> bucket_counts;  // [upper_bounds.size()], cumulative
  double sum = 0.0;
  uint64_t count = 0;

  explicit Histogram(std::vector<double> bounds = {});
  void observe(double value);
};

// vLLM's bucket sets (docs/reference/openai-api.md section 7).
std::vector<double> ttft_buckets_seconds();
std::vector<double> itl_buckets_seconds();
std::vector<double> request_latency_buckets_seconds();
std::vector<double> iteration_tokens_buckets();

struct EngineMetrics {
  int32_t num_requests_running = 0;
  int32_t num_requests_waiting = 0;  // queued in the scheduler or not yet picked up
  double kv_cache_usage = 0.0;       // used KV blocks / all blocks, 0..1
  int32_t num_free_blocks = 0;
  int32_t num_total_blocks = 0;
  uint64_t num_preemptions = 0;
  uint64_t prefix_cache_queries = 0;  // prompt tokens looked up in the prefix cache
  uint64_t prefix_cache_hits = 0;     // of them, found cached
  uint64_t prompt_tokens = 0;         // prompt tokens of requests that reached their first token
  uint64_t generation_tokens = 0;     // generated tokens
  uint64_t num_steps = 0;
  std::map<std::string, uint64_t> request_success;  // finish reason -> finished requests
  Histogram time_to_first_token_seconds{ttft_buckets_seconds()};
  Histogram inter_token_latency_seconds{itl_buckets_seconds()};
  Histogram e2e_request_latency_seconds{request_latency_buckets_seconds()};
  Histogram request_queue_time_seconds{request_latency_buckets_seconds()};
  Histogram iteration_tokens{iteration_tokens_buckets()};    // tokens computed per step
  Histogram iteration_num_seqs{iteration_tokens_buckets()};  // sequences per step (batch size)
};

}  // namespace crosspoint
