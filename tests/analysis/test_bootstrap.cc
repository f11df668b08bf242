// The bootstrap intervals: coverage of a known median in a seeded simulation, reproducibility
// from the seed, the clustered (per-request) resampling, the throughput and repeat intervals.
#include <gtest/gtest.h>

#include <cmath>

#include "analysis/bootstrap.h"
#include "analysis/cell_measurement.h"

namespace crosspoint::analysis {
namespace {

// Exponential(1) draws from the portable generator: median ln 2.
std::vector<double> exponential_sample(SplitMix64& rng, size_t n) {
  std::vector<double> out;
  for (size_t i = 0; i < n; ++i) out.push_back(-std::log(1.0 - rng.uniform()));
  return out;
}

TEST(Bootstrap, LinearPercentileMatchesNumpy) {
  // numpy.percentile([1, 2, 3, 4], [50, 99, 0, 100]) = 2.5, 3.97, 1, 4
  EXPECT_DOUBLE_EQ(linear_percentile({4, 1, 3, 2}, 50), 2.5);
  EXPECT_NEAR(linear_percentile({4, 1, 3, 2}, 99), 3.97, 1e-12);
  EXPECT_DOUBLE_EQ(linear_percentile({4, 1, 3, 2}, 0), 1);
  EXPECT_DOUBLE_EQ(linear_percentile({4, 1, 3, 2}, 100), 4);
  EXPECT_DOUBLE_EQ(linear_percentile({}, 50), 0);
}

// In 400 seeded experiments of 80 exponential draws, the 95 % interval of the median covers
// the true median ln 2 about 95 % of the time (the percentile bootstrap of a median runs a
// little under or over nominal at this size; 89..99 % is its sampling range with margin).
TEST(Bootstrap, MedianIntervalCoversTheTrueMedianAtAboutTheNominalRate) {
  SplitMix64 data(12345);
  const double truth = std::log(2.0);
  int covered = 0;
  constexpr int kTrials = 400;
  BootstrapOptions options;
  options.resamples = 1000;
  for (int trial = 0; trial < kTrials; ++trial) {
    const std::vector<double> sample = exponential_sample(data, 80);
    options.seed = kBootstrapSeed + static_cast<uint64_t>(trial);
    const Interval median = bootstrap_percentiles(sample, {50}, options)[0];
    EXPECT_LE(median.lower, median.estimate);
    EXPECT_GE(median.upper, median.estimate);
    if (median.lower <= truth && truth <= median.upper) ++covered;
  }
  const double rate = static_cast<double>(covered) / kTrials;
  EXPECT_GT(rate, 0.89) << rate;
  EXPECT_LT(rate, 0.99) << rate;
}

TEST(Bootstrap, SameSeedSameIntervalsOtherSeedOtherIntervals) {
  SplitMix64 data(7);
  const std::vector<double> sample = exponential_sample(data, 50);
  const auto a = bootstrap_percentiles(sample, {50, 99});
  const auto b = bootstrap_percentiles(sample, {50, 99});
  ASSERT_EQ(a.size(), 2u);
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].estimate, b[i].estimate);
    EXPECT_EQ(a[i].lower, b[i].lower);
    EXPECT_EQ(a[i].upper, b[i].upper);
  }
  BootstrapOptions other;
  other.seed = kBootstrapSeed + 1;
  const auto c = bootstrap_percentiles(sample, {50}, other);
  EXPECT_EQ(c[0].estimate, a[0].estimate);
  EXPECT_TRUE(c[0].lower != a[0].lower || c[0].upper != a[0].upper);
}

TEST(Bootstrap, TheGeneratorIsTheSameEverywhere) {
  // splitmix64's reference output for seed 1234567 (Vigna's splitmix64.c).
  SplitMix64 rng(1234567);
  EXPECT_EQ(rng.next(), 6457827717110365317ull);
  EXPECT_EQ(rng.next(), 3203168211198807973ull);
}

TEST(Bootstrap, IntervalsNarrowWithMoreRequests) {
  SplitMix64 data(99);
  const auto small = bootstrap_percentiles(exponential_sample(data, 20), {50})[0];
  const auto large = bootstrap_percentiles(exponential_sample(data, 2000), {50})[0];
  EXPECT_LT(large.upper - large.lower, (small.upper - small.lower) / 3);
}

TEST(Bootstrap, GroupsAreResampledWhole) {
  // Two requests: one with gaps all 1, one with gaps all 3. Every replicate takes whole
  // requests, so the pooled median is 1, 2 (one of each) or 3 and nothing else.
  const std::vector<std::vector<double>> groups = {{1, 1, 1, 1}, {3, 3, 3, 3}};
  const Interval median = bootstrap_percentiles(groups, {50})[0];
  EXPECT_DOUBLE_EQ(median.estimate, 2);
  EXPECT_DOUBLE_EQ(median.lower, 1);
  EXPECT_DOUBLE_EQ(median.upper, 3);
  // A constant sample has a degenerate interval.
  const Interval constant = bootstrap_percentiles(std::vector<double>(30, 5.0), {50, 99})[1];
  EXPECT_DOUBLE_EQ(constant.lower, 5);
  EXPECT_DOUBLE_EQ(constant.upper, 5);
  // No values at all: zeros, not a crash.
  const Interval empty = bootstrap_percentiles(std::vector<std::vector<double>>{{}, {}}, {50})[0];
  EXPECT_EQ(empty.estimate, 0);
}

TEST(Bootstrap, RatioIntervalIsCentredOnTheMeasuredThroughput) {
  SplitMix64 data(5);
  std::vector<double> tokens(64, 16.0), latency = exponential_sample(data, 64);
  const Interval ci = bootstrap_ratio_interval(tokens, latency, 250.0);
  EXPECT_DOUBLE_EQ(ci.estimate, 250.0);
  EXPECT_LT(ci.lower, 250.0);
  EXPECT_GT(ci.upper, 250.0);
  EXPECT_GT(ci.lower, 100.0);
  EXPECT_LT(ci.upper, 500.0);
}

TEST(Bootstrap, TIntervalOverRepeats) {
  // mean 10, sd 1, n 4: 10 +- 3.182 * 1 / 2
  const Interval ci = t_interval({9, 10, 11, 10 + 0.0}, 0.95);
  EXPECT_DOUBLE_EQ(ci.estimate, 10);
  const double sd = std::sqrt(2.0 / 3.0);
  EXPECT_NEAR(ci.upper - 10, 3.182 * sd / 2, 1e-9);
  EXPECT_NEAR(10 - ci.lower, 3.182 * sd / 2, 1e-9);
  const Interval one = t_interval({7});
  EXPECT_EQ(one.lower, 7);
  EXPECT_EQ(one.upper, 7);
}

TEST(Bootstrap, Overlap) {
  EXPECT_TRUE(intervals_overlap({0, 1, 2}, {0, 2, 3}));
  EXPECT_TRUE(intervals_overlap({0, 1, 3}, {0, 2, 2.5}));
  EXPECT_FALSE(intervals_overlap({0, 1, 2}, {0, 2.01, 3}));
}

// A result with per-request lists gets intervals; runs of a cell merge into one with the
// pooled requests; throughput's interval comes from the runs from three on.
TEST(CellIntervals, RequestsAndRepeats) {
  auto run = [](double scale, double throughput) {
    CellMeasurement c;
    c.precision = "w4a16";
    c.concurrency = 4;
    c.num_completed = 8;
    c.duration_s = 2;
    c.output_throughput_tok_s = throughput;
    c.run_output_throughputs = {throughput};
    for (int i = 0; i < 8; ++i) {
      const double tpot = scale * (2.0 + 0.1 * i);
      c.request_tpot_ms.push_back(tpot);
      c.request_ttft_ms.push_back(30 + i);
      c.request_e2el_ms.push_back(30 + i + 15 * tpot);
      c.request_output_tokens.push_back(16);
      c.request_itl_ms.push_back(std::vector<double>(15, tpot));
    }
    c.median_tpot_ms = linear_percentile(c.request_tpot_ms, 50);
    return c;
  };
  CellMeasurement single = run(1.0, 100);
  estimate_intervals(single);
  ASSERT_TRUE(single.median_tpot_ci.has_value());
  ASSERT_TRUE(single.p99_itl_ci.has_value());
  ASSERT_TRUE(single.output_throughput_ci.has_value());
  EXPECT_DOUBLE_EQ(single.output_throughput_ci->estimate, 100);
  EXPECT_LE(single.median_tpot_ci->lower, *single.median_tpot_ms);
  EXPECT_GE(single.median_tpot_ci->upper, *single.median_tpot_ms);

  const std::vector<CellMeasurement> merged = merge_repeated_runs({run(1.0, 100), run(1.1, 110)});
  ASSERT_EQ(merged.size(), 1u);
  CellMeasurement cell = merged[0];
  EXPECT_EQ(cell.num_runs, 2);
  EXPECT_EQ(cell.num_completed, 16);
  EXPECT_EQ(cell.request_tpot_ms.size(), 16u);
  EXPECT_DOUBLE_EQ(*cell.output_throughput_tok_s, 105);
  EXPECT_DOUBLE_EQ(*cell.median_tpot_ms, linear_percentile(cell.request_tpot_ms, 50));
  estimate_intervals(cell);
  ASSERT_TRUE(cell.output_throughput_ci.has_value());
  // Two runs: the pooled requests' bootstrap around the runs' mean, not a 1-degree t interval.
  EXPECT_DOUBLE_EQ(cell.output_throughput_ci->estimate, 105);
  EXPECT_LT(cell.output_throughput_ci->upper - 105, 12.706 * 5 / std::sqrt(2.0));

  // Three runs: the runs' own spread (mean 110, sd 10, t = 4.303 for 2 degrees of freedom).
  CellMeasurement three = merge_repeated_runs({run(1.0, 100), run(1.1, 110), run(1.2, 120)})[0];
  estimate_intervals(three);
  ASSERT_TRUE(three.output_throughput_ci.has_value());
  EXPECT_DOUBLE_EQ(three.output_throughput_ci->estimate, 110);
  EXPECT_NEAR(three.output_throughput_ci->upper - 110, 4.303 * 10 / std::sqrt(3.0), 1e-6);
  EXPECT_EQ(three.num_runs, 3);
  EXPECT_EQ(three.run_output_throughputs.size(), 3u);

  // Three runs so spread out that the t interval would reach below zero: it stops at zero.
  CellMeasurement wide = merge_repeated_runs({run(1.0, 5), run(1.1, 50), run(1.2, 95)})[0];
  estimate_intervals(wide);
  ASSERT_TRUE(wide.output_throughput_ci.has_value());
  EXPECT_DOUBLE_EQ(wide.output_throughput_ci->lower, 0.0);
  EXPECT_NEAR(wide.output_throughput_ci->upper - 50, 4.303 * 45 / std::sqrt(3.0), 1e-6);
}

}  // namespace
}  // namespace crosspoint::analysis
