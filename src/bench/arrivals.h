// When each request is released: vLLM's arrival process. Rate inf releases everything at
// t = 0; a finite rate r draws gaps from Gamma(shape = b, scale = 1 / (r * b)) (b = 1 is
// Poisson), takes the running sum and rescales it so the last arrival lands at N / r, as
// current vLLM does. Burstiness inf gives constant gaps 1 / r.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace crosspoint::bench {

// Seconds since the benchmark start, one per request, non-decreasing.
std::vector<double> arrival_times_s(int num_requests, double request_rate, double burstiness, uint64_t seed);

// vLLM's ramp-up (--ramp-up-strategy): request i of N has its own rate r_i, with progress
// p = i / max(N - 1, 1): linear r_i = start + (end - start) p, exponential
// r_i = start (end / start)^p. Its gap (before it) is drawn from Gamma(b, 1 / (r_i b)), or is
// 1 / r_i when b is inf; the arrival is the running sum, not rescaled (vLLM rescales only
// without a ramp-up). start_rps > 0.
double ramp_up_rate(const std::string& strategy, double start_rps, double end_rps, int request_index, int num_requests);
std::vector<double> ramp_up_arrival_times_s(int num_requests, const std::string& strategy, double start_rps,
                                            double end_rps, double burstiness, uint64_t seed);

}  // namespace crosspoint::bench
