// Arrival process: shape of the schedule and the statistics of its gaps.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "bench/arrivals.h"

namespace crosspoint::bench {
namespace {

double gap_cv(const std::vector<double>& times) {
  std::vector<double> gaps;
  double previous = 0;
  for (double t : times) {
    gaps.push_back(t - previous);
    previous = t;
  }
  double mean = 0, var = 0;
  for (double g : gaps) mean += g;
  mean /= gaps.size();
  for (double g : gaps) var += (g - mean) * (g - mean);
  return std::sqrt(var / gaps.size()) / mean;
}

TEST(Arrivals, InfiniteRateReleasesEverythingAtZero) {
  for (double t : arrival_times_s(7, std::numeric_limits<double>::infinity(), 1.0, 0)) EXPECT_EQ(t, 0.0);
}

TEST(Arrivals, RescaledSoTheLastArrivesAtNOverRate) {
  const auto times = arrival_times_s(101, 20.0, 1.0, 5);
  ASSERT_EQ(times.size(), 101u);
  EXPECT_NEAR(times.back(), 101 / 20.0, 1e-9);
  for (size_t i = 1; i < times.size(); ++i) EXPECT_LE(times[i - 1], times[i]);
  EXPECT_GT(times.front(), 0.0);  // the first request also waits one gap, as in vLLM
}

TEST(Arrivals, SameSeedSameSchedule) {
  EXPECT_EQ(arrival_times_s(50, 3.0, 0.5, 9), arrival_times_s(50, 3.0, 0.5, 9));
  EXPECT_NE(arrival_times_s(50, 3.0, 0.5, 9), arrival_times_s(50, 3.0, 0.5, 10));
}

TEST(Arrivals, GapSpreadFollowsBurstiness) {
  // Gamma(shape b) gaps have coefficient of variation 1 / sqrt(b); with 20,000 gaps the
  // estimate is within a few percent.
  EXPECT_NEAR(gap_cv(arrival_times_s(20000, 10.0, 1.0, 1)), 1.0, 0.05);
  EXPECT_NEAR(gap_cv(arrival_times_s(20000, 10.0, 4.0, 2)), 0.5, 0.03);
  EXPECT_NEAR(gap_cv(arrival_times_s(20000, 10.0, 0.25, 3)), 2.0, 0.15);
  EXPECT_NEAR(gap_cv(arrival_times_s(100, 10.0, std::numeric_limits<double>::infinity(), 4)), 0.0, 1e-9);
}

}  // namespace
}  // namespace crosspoint::bench
