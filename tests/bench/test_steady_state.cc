#include "bench/steady_state.h"

#include <gtest/gtest.h>

namespace crosspoint::bench {
namespace {

RequestRecord request(double start_s, double latency_s) {
  RequestRecord r;
  r.start_s = start_s;
  r.latency_s = latency_s;
  return r;
}

ServerMetricsSample running(double time_s, double n) {
  ServerMetricsSample s;
  s.time_s = time_s;
  s.num_running = n;
  return s;
}

TEST(SteadyStateWindow, FromAllSlotsHeldToTheFirstCompletionAfterTheLastDispatch) {
  // Two slots: a and b start at 0 and 1 (full at 1); a ends at 4 and c takes its slot; b ends
  // at 5 and d (the last dispatch) takes it; c ends at 6 first, and its slot stays empty.
  const std::vector<RequestRecord> records = {request(0, 4), request(1, 4), request(4, 2), request(5, 3)};
  const std::vector<ServerMetricsSample> samples = {running(0.5, 1), running(2, 2), running(3, 1.5), running(5.5, 2),
                                                    running(7, 1)};
  const SteadyStateWindow w = steady_state_window(records, 2, samples);
  ASSERT_TRUE(w.valid) << w.reason;
  EXPECT_DOUBLE_EQ(w.start_s, 1);
  EXPECT_DOUBLE_EQ(w.end_s, 6);
  EXPECT_DOUBLE_EQ(w.client_mean_in_flight, 2);  // a slot handed over at once is not a gap
  EXPECT_EQ(w.num_server_samples, 3);            // 2, 3 and 5.5: the samples at 0.5 and 7 are outside
  ASSERT_TRUE(w.server_mean_running.has_value());
  EXPECT_DOUBLE_EQ(*w.server_mean_running, (2 + 1.5 + 2) / 3);
}

TEST(SteadyStateWindow, GapsBetweenACompletionAndTheNextDispatchLowerTheClientMean) {
  // One slot: 0..2, then the next request only at 3 (1 s of client lag), last ends at 5.
  const std::vector<RequestRecord> records = {request(0, 2), request(3, 2), request(5.5, 1)};
  const SteadyStateWindow w = steady_state_window(records, 1, {});
  ASSERT_TRUE(w.valid) << w.reason;
  EXPECT_DOUBLE_EQ(w.start_s, 0);
  EXPECT_DOUBLE_EQ(w.end_s, 6.5);
  EXPECT_NEAR(w.client_mean_in_flight, 5.0 / 6.5, 1e-12);
  EXPECT_FALSE(w.server_mean_running.has_value());
}

TEST(SteadyStateWindow, SaysWhyThereIsNone) {
  EXPECT_FALSE(steady_state_window({}, 4, {}).valid);
  const std::vector<RequestRecord> three = {request(0, 1), request(0, 1), request(0, 1)};
  const SteadyStateWindow w = steady_state_window(three, 4, {});
  EXPECT_FALSE(w.valid);
  EXPECT_NE(w.reason.find("never held all 4 slots"), std::string::npos) << w.reason;
  EXPECT_FALSE(steady_state_window(three, 0, {}).valid);
}

}  // namespace
}  // namespace crosspoint::bench
