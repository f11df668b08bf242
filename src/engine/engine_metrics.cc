#include "engine/engine_metrics.h"

#include <algorithm>

namespace crosspoint {

Histogram::Histogram(std::vector<double> bounds)
    : upper_bounds(std::move(bounds)), bucket_counts(upper_bounds.size(), 0) {}

void Histogram::observe(double value) {
  for (size_t i = 0; i < upper_bounds.size(); ++i) {
    if (value <= upper_bounds[i]) ++bucket_counts[i];
  }
  sum += value;
  ++count;
}

std::vector<double> ttft_buckets_seconds() {
  return {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,  0.25,  0.5,   0.75,
          1.0,   2.5,   5.0,  7.5,  10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0};
}

std::vector<double> itl_buckets_seconds() {
  return {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0};
}

std::vector<double> request_latency_buckets_seconds() {
  return {0.3,  0.5,  0.8,  1.0,  1.5,   2.0,   2.5,   5.0,   10.0,   15.0,  20.0,
          30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};
}

std::vector<double> iteration_tokens_buckets() {
  return {1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384};
}

}  // namespace crosspoint
