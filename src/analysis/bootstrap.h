// Confidence intervals for the numbers a study compares: percentile bootstrap over requests
// for latency percentiles (median, p99), a request-resampled ratio for throughput, and a
// Student t interval over repeated runs. Seeded with a fixed, documented seed and a
// portable generator, so the same measurements give the same intervals on every machine.
#pragma once

#include <cstdint>
#include <vector>

namespace crosspoint::analysis {

// A point estimate with its interval [lower, upper] (lower <= estimate <= upper when the
// interval is non-degenerate).
struct Interval {
  double estimate = 0;
  double lower = 0;
  double upper = 0;
};

// The seed every report uses (docs/analysis.md, "Intervals"): reports are reproducible.
inline constexpr uint64_t kBootstrapSeed = 20261221;

struct BootstrapOptions {
  int resamples = 1000;      // bootstrap replicates
  double confidence = 0.95;  // two-sided
  uint64_t seed = kBootstrapSeed;
};

// numpy's default percentile (linear interpolation between order statistics), p in [0, 100].
// 0 for an empty list.
double linear_percentile(std::vector<double> values, double p);

// Percentile bootstrap of percentiles `ps` (each in [0, 100]) of the values pooled over
// `groups`: each replicate draws groups.size() groups with replacement (a request is a group;
// a metric with one value per request has groups of one, ITL has each request's gaps) and
// takes the percentiles of the pooled values. The estimate is the percentile of all values;
// the interval is the (1 - confidence) / 2 and 1 - (1 - confidence) / 2 quantiles of the
// replicates. Empty groups are skipped; with no values every interval is {0, 0, 0}.
std::vector<Interval> bootstrap_percentiles(const std::vector<std::vector<double>>& groups,
                                            const std::vector<double>& ps, const BootstrapOptions& options = {});
// The same for one value per request.
std::vector<Interval> bootstrap_percentiles(const std::vector<double>& values, const std::vector<double>& ps,
                                            const BootstrapOptions& options = {});

// Interval of a throughput measured as sum(numerators) / duration from one run: requests are
// resampled and the ratio sum(numerators) / sum(denominators) (output tokens over request
// latency, Little's law for a closed loop) taken per replicate; its relative spread around the
// full-sample ratio is applied to `measured` (the bench's own tokens / duration figure). The
// estimate is `measured`.
Interval bootstrap_ratio_interval(const std::vector<double>& numerators, const std::vector<double>& denominators,
                                  double measured, const BootstrapOptions& options = {});

// Mean of repeated measurements with a two-sided Student t interval (n - 1 degrees of
// freedom); one value gives a degenerate interval.
Interval t_interval(const std::vector<double>& values, double confidence = 0.95);

// True when the two intervals share at least one point.
bool intervals_overlap(const Interval& a, const Interval& b);

// A small portable generator (splitmix64): the same stream on every platform, unlike the
// standard library's distributions.
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t next();
  // Uniform in [0, n) (Lemire's multiply-shift; the tiny bias at n << 2^64 is irrelevant here).
  uint64_t below(uint64_t n);
  // Uniform in [0, 1).
  double uniform();

 private:
  uint64_t state_;
};

}  // namespace crosspoint::analysis
