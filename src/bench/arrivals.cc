#include "bench/arrivals.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "common/status.h"

namespace crosspoint::bench {

std::vector<double> arrival_times_s(int num_requests, double request_rate, double burstiness, uint64_t seed) {
  CROSSPOINT_CHECK(num_requests >= 0 && request_rate > 0 && burstiness > 0, "bad arrival parameters");
  std::vector<double> times(num_requests, 0.0);
  if (std::isinf(request_rate) || num_requests == 0) return times;
  // numpy's generator cannot be reproduced here; the distribution is the same.
  std::mt19937_64 rng(seed);
  std::gamma_distribution<double> gap(burstiness, 1.0 / (request_rate * burstiness));
  double cumulative = 0;
  for (int i = 0; i < num_requests; ++i) {
    cumulative += std::isinf(burstiness) ? 1.0 / request_rate : gap(rng);
    times[i] = cumulative;
  }
  if (cumulative > 0) {
    const double scale = (num_requests / request_rate) / cumulative;
    for (double& t : times) t *= scale;
  }
  return times;
}

double ramp_up_rate(const std::string& strategy, double start_rps, double end_rps, int request_index,
                    int num_requests) {
  const double progress = static_cast<double>(request_index) / std::max(num_requests - 1, 1);
  if (strategy == "exponential") return start_rps * std::pow(end_rps / start_rps, progress);
  CROSSPOINT_CHECK(strategy == "linear", "unknown ramp-up strategy");
  return start_rps + (end_rps - start_rps) * progress;
}

std::vector<double> ramp_up_arrival_times_s(int num_requests, const std::string& strategy, double start_rps,
                                            double end_rps, double burstiness, uint64_t seed) {
  CROSSPOINT_CHECK(num_requests >= 0 && start_rps > 0 && end_rps >= start_rps && burstiness > 0,
                   "bad ramp-up parameters");
  std::vector<double> times(num_requests, 0.0);
  std::mt19937_64 rng(seed);
  double cumulative = 0;
  for (int i = 0; i < num_requests; ++i) {
    const double rate = ramp_up_rate(strategy, start_rps, end_rps, i, num_requests);
    if (std::isinf(burstiness)) {
      cumulative += 1.0 / rate;
    } else {
      std::gamma_distribution<double> gap(burstiness, 1.0 / (rate * burstiness));
      cumulative += gap(rng);
    }
    times[i] = cumulative;
  }
  return times;
}

}  // namespace crosspoint::bench
