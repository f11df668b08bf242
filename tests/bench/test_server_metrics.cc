// Prometheus text parsing and the run summary of the server's own figures.
#include <gtest/gtest.h>

#include "bench/server_metrics.h"

namespace crosspoint::bench {
namespace {

const char* kVllmText =
    "# HELP vllm:num_requests_running Number of requests in model execution batches.\n"
    "# TYPE vllm:num_requests_running gauge\n"
    "vllm:num_requests_running{engine=\"0\",model_name=\"m\"} 3.0\n"
    "vllm:num_requests_running{engine=\"1\",model_name=\"m\"} 2.0\n"
    "vllm:num_requests_waiting{engine=\"0\",model_name=\"m\"} 4.0\n"
    "vllm:kv_cache_usage_perc{engine=\"0\",model_name=\"m\"} 0.25\n"
    "vllm:num_preemptions_total{engine=\"0\",model_name=\"m\"} 7.0\n"
    "vllm:time_to_first_token_seconds_bucket{le=\"0.001\",model_name=\"m\"} 0.0\n"
    "process_cpu_seconds_total 12.5 1700000000000\n"
    "garbage line without value\n";

TEST(ServerMetrics, ParsesAndSumsLabelSets) {
  const auto values = parse_prometheus_text(kVllmText);
  EXPECT_DOUBLE_EQ(values.at("vllm:num_requests_running"), 5.0);
  EXPECT_DOUBLE_EQ(values.at("process_cpu_seconds_total"), 12.5);
  const ServerMetricsSample s = reduce_sample(values, 1.0);
  EXPECT_EQ(*s.num_running, 5.0);
  EXPECT_EQ(*s.num_waiting, 4.0);
  EXPECT_EQ(*s.kv_cache_usage, 0.25);
  EXPECT_EQ(*s.num_preemptions, 7.0);
}

TEST(ServerMetrics, CrosspointAndDeprecatedNames) {
  const auto s = reduce_sample(parse_prometheus_text("crosspoint:num_requests_running 2\n"
                                                     "vllm:gpu_cache_usage_perc 0.5\n"),
                               0);
  EXPECT_EQ(*s.num_running, 2.0);
  EXPECT_EQ(*s.kv_cache_usage, 0.5);
  EXPECT_FALSE(s.num_preemptions.has_value());
}

TEST(ServerMetrics, Summary) {
  std::vector<ServerMetricsSample> samples(3);
  const double running[] = {2, 6, 4};
  const double preemptions[] = {10, 11, 15};
  for (int i = 0; i < 3; ++i) {
    samples[i].num_running = running[i];
    samples[i].kv_cache_usage = running[i] / 10;
    samples[i].num_preemptions = preemptions[i];
  }
  const ServerMetricsSummary s = summarize_server_metrics(samples);
  EXPECT_TRUE(s.available);
  EXPECT_EQ(s.num_samples, 3);
  EXPECT_DOUBLE_EQ(s.mean_running, 4.0);
  EXPECT_DOUBLE_EQ(s.max_running, 6.0);
  EXPECT_DOUBLE_EQ(*s.mean_kv_cache_usage, 0.4);
  EXPECT_DOUBLE_EQ(*s.max_kv_cache_usage, 0.6);
  EXPECT_DOUBLE_EQ(*s.num_preemptions, 5.0);
  EXPECT_FALSE(s.prefix_cache_hit_rate.has_value());  // the server exposes no prefix cache counters
  EXPECT_FALSE(summarize_server_metrics({}).available);
}

TEST(ServerMetrics, DecodeStepBatchLeavesOutIdleSamples) {
  // Concurrency 1 with gaps between requests: four samples idle, one running.
  std::vector<ServerMetricsSample> samples(5);
  for (int i = 0; i < 5; ++i) samples[i].num_running = i == 2 ? 1 : 0;
  const ServerMetricsSummary s = summarize_server_metrics(samples);
  EXPECT_DOUBLE_EQ(s.mean_running, 0.2);
  ASSERT_TRUE(s.mean_running_while_busy.has_value());
  EXPECT_DOUBLE_EQ(*s.mean_running_while_busy, 1.0);
  std::vector<ServerMetricsSample> idle(2);
  idle[0].num_running = idle[1].num_running = 0;
  EXPECT_FALSE(summarize_server_metrics(idle).mean_running_while_busy.has_value());
}

TEST(ServerMetrics, PrefixCacheHitRateOverTheRun) {
  const auto values = parse_prometheus_text(
      "vllm:num_requests_running{model_name=\"m\"} 3\n"
      "vllm:prefix_cache_queries_total{model_name=\"m\"} 1000\n"
      "vllm:prefix_cache_hits_total{model_name=\"m\"} 200\n");
  std::vector<ServerMetricsSample> samples = {reduce_sample(values, 0.0), reduce_sample(values, 1.0)};
  samples[1].prefix_cache_queries = 3000;  // 2000 tokens looked up during the run ...
  samples[1].prefix_cache_hits = 1700;     // ... 1500 of them found
  const ServerMetricsSummary s = summarize_server_metrics(samples);
  ASSERT_TRUE(s.prefix_cache_hit_rate.has_value());
  EXPECT_DOUBLE_EQ(*s.prefix_cache_queries, 2000);
  EXPECT_DOUBLE_EQ(*s.prefix_cache_hits, 1500);
  EXPECT_DOUBLE_EQ(*s.prefix_cache_hit_rate, 0.75);
}

}  // namespace
}  // namespace crosspoint::bench
