#include "bench/arrivals.h"

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

}  // namespace crosspoint::bench
