// Metric math: numpy's statistics (fixture) and vLLM's calculate_metrics rules on
// hand-built records whose answers are worked out in the comments.
#include <gtest/gtest.h>

#include "bench/metrics.h"
#include "bench_test_util.h"

namespace crosspoint::bench {
namespace {

TEST(Statistics, MatchNumpyOnAwkwardSizes) {
  const nlohmann::json cases = testing::load_fixture_json("numpy_stats.json");
  for (const auto& c : cases) {
    const auto values = c["values"].get<std::vector<double>>();
    SCOPED_TRACE("n = " + std::to_string(values.size()));
    EXPECT_NEAR(mean_of(values), c["mean"].get<double>(), 1e-12);
    EXPECT_NEAR(median_of(values), c["median"].get<double>(), 1e-12);
    EXPECT_NEAR(std_of(values), c["std"].get<double>(), 1e-12);
    const auto ps = c["percentiles"].get<std::vector<double>>();
    const auto expected = c["percentile_values"].get<std::vector<double>>();
    for (size_t i = 0; i < ps.size(); ++i) EXPECT_NEAR(percentile_of(values, ps[i]), expected[i], 1e-12) << ps[i];
  }
}

TEST(Statistics, PercentileKeyText) {
  EXPECT_EQ(percentile_key_text(99), "99");
  EXPECT_EQ(percentile_key_text(50.0), "50");
  EXPECT_EQ(percentile_key_text(99.9), "99.9");
  EXPECT_EQ(percentile_key_text(33.3), "33.3");
}

RequestRecord ok_record(double start, double ttft, std::vector<double> itl, int output_len, int prompt_len) {
  RequestRecord r;
  r.success = true;
  r.start_s = start;
  r.ttft_s = ttft;
  r.itl_s = std::move(itl);
  double latency = ttft;
  for (double gap : r.itl_s) latency += gap;
  r.latency_s = latency;
  r.output_len = output_len;
  r.prompt_len = prompt_len;
  return r;
}

TEST(ComputeMetrics, FollowsVllmRules) {
  std::vector<RequestRecord> records;
  // A: 4 tokens in 4 events: ttft 0.1, gaps 0.05 each -> latency 0.25, TPOT 0.05.
  records.push_back(ok_record(0.0, 0.1, {0.05, 0.05, 0.05}, 4, 10));
  // B: 1 output token: left out of TPOT, TPOT 0 for goodput.
  records.push_back(ok_record(0.2, 0.3, {}, 1, 20));
  // C: 6 tokens packed in 2 events: ITL has one gap, TPOT uses the token count: 0.5/5 = 0.1.
  records.push_back(ok_record(1.5, 0.2, {0.5}, 6, 30));
  // D: failed; counts nowhere but `failed`.
  RequestRecord failed;
  failed.error = "HTTP 500";
  failed.prompt_len = 99;
  records.push_back(failed);

  GoodputSlos slos;
  slos.ttft_ms = 200;  // A (0.1) and C (0.2, inclusive) pass, B (0.3) fails
  slos.tpot_ms = 60;   // A 0.05 passes, C 0.1 fails
  const BenchMetrics m = compute_metrics(records, 2.0, {50, 100}, slos);
  EXPECT_EQ(m.completed, 3);
  EXPECT_EQ(m.failed, 1);
  EXPECT_EQ(m.total_input_tokens, 60);
  EXPECT_EQ(m.total_output_tokens, 11);
  EXPECT_DOUBLE_EQ(m.request_throughput, 1.5);
  EXPECT_DOUBLE_EQ(m.output_throughput, 5.5);
  EXPECT_DOUBLE_EQ(m.total_token_throughput, 35.5);
  EXPECT_EQ(m.good_requests, 1);  // only A
  EXPECT_DOUBLE_EQ(m.request_goodput, 0.5);
  EXPECT_EQ(m.is_good, (std::vector<bool>{true, false, false, false}));
  // TPOT over A and C only: mean (0.05 + 0.1) / 2.
  EXPECT_NEAR(m.tpot.mean_ms, 75.0, 1e-9);
  // ITL pooled: 0.05, 0.05, 0.05, 0.5.
  EXPECT_NEAR(m.itl.mean_ms, 162.5, 1e-9);
  EXPECT_NEAR(m.itl.median_ms, 50.0, 1e-9);
  EXPECT_NEAR(m.ttft.percentiles_ms[1].second, 300.0, 1e-9);
  EXPECT_NEAR(m.e2el.mean_ms, (250.0 + 300.0 + 700.0) / 3, 1e-9);
  // A [0, 0.25), B [0.2, 0.5), C [1.5, 2.2): A and B overlap.
  EXPECT_EQ(m.max_concurrent_requests, 2);
  // Token events: A at 0.1..0.25, B at 0.5, C at 1.7 and 2.2 -> bucket 0 holds 5.
  EXPECT_DOUBLE_EQ(m.max_output_tokens_per_s, 5.0);
}

TEST(ComputeMetrics, BackToBackRequestsDoNotOverlap) {
  // Half-open intervals: one ends exactly when the next starts.
  std::vector<RequestRecord> records = {ok_record(0.0, 0.5, {0.5}, 2, 1), ok_record(1.0, 0.5, {0.5}, 2, 1)};
  EXPECT_EQ(compute_metrics(records, 2.0, {99}, {}).max_concurrent_requests, 1);
}

TEST(ComputeMetrics, AllFailedGivesZeros) {
  RequestRecord failed;
  failed.error = "refused";
  const BenchMetrics m = compute_metrics({failed, failed}, 1.0, {99}, {});
  EXPECT_EQ(m.completed, 0);
  EXPECT_EQ(m.failed, 2);
  EXPECT_EQ(m.ttft.mean_ms, 0);
  EXPECT_EQ(m.ttft.percentiles_ms[0].second, 0);
  EXPECT_EQ(m.max_output_tokens_per_s, 0);
  EXPECT_EQ(m.good_requests, 0);
}

}  // namespace
}  // namespace crosspoint::bench
