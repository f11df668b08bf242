#include "bench/steady_state.h"

#include <algorithm>
#include <limits>
#include <utility>

namespace crosspoint::bench {

SteadyStateWindow steady_state_window(const std::vector<RequestRecord>& records, int concurrency,
                                      const std::vector<ServerMetricsSample>& samples) {
  SteadyStateWindow w;
  if (concurrency <= 0) {
    w.reason = "the run had no concurrency cap";
    return w;
  }
  if (records.empty()) {
    w.reason = "no requests";
    return w;
  }
  // (time, +1 start / -1 end); at equal times ends first, so a slot handed straight to the next
  // request does not count as C + 1 in flight.
  std::vector<std::pair<double, int>> events;
  double last_start = -std::numeric_limits<double>::infinity();
  for (const RequestRecord& r : records) {
    events.emplace_back(r.start_s, +1);
    events.emplace_back(r.start_s + std::max(0.0, r.latency_s), -1);
    last_start = std::max(last_start, r.start_s);
  }
  std::sort(events.begin(), events.end());
  int in_flight = 0;
  bool full = false;
  double area = 0, prev_t = 0;
  for (const auto& [t, delta] : events) {
    if (full) area += in_flight * (t - prev_t);
    prev_t = t;
    in_flight += delta;
    if (!full && in_flight >= concurrency) {
      full = true;
      w.start_s = t;
    }
    // The first completion after the last dispatch: from here on a slot stays empty.
    if (full && delta < 0 && t > last_start && t > w.start_s) {
      w.end_s = t;
      w.valid = true;
      break;
    }
  }
  if (!full) {
    w.reason = "the client never held all " + std::to_string(concurrency) + " slots";
    return w;
  }
  if (!w.valid) {
    w.reason = "no completion after the last dispatch";
    return w;
  }
  w.client_mean_in_flight = area / w.duration_s();
  double sum = 0;
  for (const ServerMetricsSample& s : samples) {
    if (!s.num_running || s.time_s < w.start_s || s.time_s > w.end_s) continue;
    sum += *s.num_running;
    ++w.num_server_samples;
  }
  if (w.num_server_samples > 0) w.server_mean_running = sum / w.num_server_samples;
  return w;
}

}  // namespace crosspoint::bench
