// The steady-state window of a closed-loop run (a client holding at most C requests in
// flight): from the moment the client first holds all C slots until the first completion after
// its last dispatch, when a slot stays empty for good. The warm-up ramp and the drain at the
// end (the long tail of output lengths finishing one by one) are outside it, so the server's
// running batch inside the window says whether the engine keeps up with its client, and the
// whole-run mean says how much of the run was ramp and drain.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "bench/request_record.h"
#include "bench/server_metrics.h"

namespace crosspoint::bench {

struct SteadyStateWindow {
  bool valid = false;
  std::string reason;                         // why not valid: the client never held all its slots, ...
  double start_s = 0, end_s = 0;              // on the records' clock (s since benchmark start)
  double client_mean_in_flight = 0;           // time-weighted over the window (= C when the client keeps up)
  std::optional<double> server_mean_running;  // mean of the /metrics samples inside the window
  int num_server_samples = 0;

  double duration_s() const { return end_s - start_s; }
};

// records: every request of the run (start_s, and start_s + latency_s as its end; failed
// requests included, they held a slot too). concurrency: the client's cap (C).
// samples: the run's /metrics samples, on the same clock.
SteadyStateWindow steady_state_window(const std::vector<RequestRecord>& records, int concurrency,
                                      const std::vector<ServerMetricsSample>& samples);

}  // namespace crosspoint::bench
