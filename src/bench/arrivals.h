// When each request is released: vLLM's arrival process. Rate inf releases everything at
// t = 0; a finite rate r draws gaps from Gamma(shape = b, scale = 1 / (r * b)) (b = 1 is
// Poisson), takes the running sum and rescales it so the last arrival lands at N / r, as
// current vLLM does. Burstiness inf gives constant gaps 1 / r.
#pragma once

#include <cstdint>
#include <vector>

namespace crosspoint::bench {

// Seconds since the benchmark start, one per request, non-decreasing.
std::vector<double> arrival_times_s(int num_requests, double request_rate, double burstiness, uint64_t seed);

}  // namespace crosspoint::bench
