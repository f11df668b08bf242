#include "analysis/bootstrap.h"

#include <algorithm>
#include <cmath>

namespace crosspoint::analysis {

namespace {

// Percentiles `ps` (ascending order not required) of values, reordering values in place;
// linear interpolation as numpy's default.
std::vector<double> percentiles_in_place(std::vector<double>& values, const std::vector<double>& ps) {
  std::vector<double> out(ps.size(), 0.0);
  if (values.empty()) return out;
  const size_t n = values.size();
  for (size_t i = 0; i < ps.size(); ++i) {
    const double h = static_cast<double>(n - 1) * std::clamp(ps[i], 0.0, 100.0) / 100.0;
    const size_t lo = static_cast<size_t>(std::floor(h));
    std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(lo), values.end());
    const double lo_value = values[lo];
    double hi_value = lo_value;
    if (lo + 1 < n) hi_value = *std::min_element(values.begin() + static_cast<std::ptrdiff_t>(lo) + 1, values.end());
    out[i] = lo_value + (h - static_cast<double>(lo)) * (hi_value - lo_value);
  }
  return out;
}

Interval interval_from_replicates(double estimate, std::vector<double> replicates, double confidence) {
  const double alpha = (1.0 - confidence) / 2.0;
  Interval out;
  out.estimate = estimate;
  out.lower = linear_percentile(replicates, 100.0 * alpha);
  out.upper = linear_percentile(std::move(replicates), 100.0 * (1.0 - alpha));
  // The percentile method can leave the estimate outside a lopsided interval; widen it so a
  // reader never sees "2.19 [2.20, 2.30]".
  out.lower = std::min(out.lower, estimate);
  out.upper = std::max(out.upper, estimate);
  return out;
}

// Two-sided Student t quantile for 0.95 confidence; 1.96 beyond 30 degrees of freedom.
double t_quantile_95(int df) {
  static const double kTable[] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
                                  2.201,  2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
                                  2.080,  2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042};
  if (df < 1) return 0;
  if (df <= 30) return kTable[df - 1];
  return 1.96;
}

// The normal quantile for a two-sided confidence (Acklam-free: a few fixed levels).
double z_quantile(double confidence) {
  if (confidence >= 0.99) return 2.576;
  if (confidence >= 0.95) return 1.96;
  if (confidence >= 0.90) return 1.645;
  return 1.0;
}

}  // namespace

uint64_t SplitMix64::next() {
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t SplitMix64::below(uint64_t n) {
  return static_cast<uint64_t>((static_cast<unsigned __int128>(next()) * n) >> 64);
}

double SplitMix64::uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

double linear_percentile(std::vector<double> values, double p) { return percentiles_in_place(values, {p})[0]; }

std::vector<Interval> bootstrap_percentiles(const std::vector<std::vector<double>>& groups,
                                            const std::vector<double>& ps, const BootstrapOptions& options) {
  std::vector<const std::vector<double>*> nonempty;
  size_t total = 0;
  for (const auto& g : groups) {
    if (g.empty()) continue;
    nonempty.push_back(&g);
    total += g.size();
  }
  std::vector<Interval> out(ps.size());
  if (nonempty.empty()) return out;
  std::vector<double> pooled;
  pooled.reserve(total);
  for (const auto* g : nonempty) pooled.insert(pooled.end(), g->begin(), g->end());
  const std::vector<double> estimates = percentiles_in_place(pooled, ps);

  SplitMix64 rng(options.seed);
  const int resamples = std::max(options.resamples, 1);
  std::vector<std::vector<double>> replicates(ps.size(), std::vector<double>(static_cast<size_t>(resamples)));
  std::vector<double> sample;
  sample.reserve(total * 2);
  const uint64_t num_groups = nonempty.size();
  for (int r = 0; r < resamples; ++r) {
    sample.clear();
    for (uint64_t i = 0; i < num_groups; ++i) {
      const std::vector<double>& g = *nonempty[rng.below(num_groups)];
      sample.insert(sample.end(), g.begin(), g.end());
    }
    const std::vector<double> values = percentiles_in_place(sample, ps);
    for (size_t k = 0; k < ps.size(); ++k) replicates[k][static_cast<size_t>(r)] = values[k];
  }
  for (size_t k = 0; k < ps.size(); ++k)
    out[k] = interval_from_replicates(estimates[k], std::move(replicates[k]), options.confidence);
  return out;
}

std::vector<Interval> bootstrap_percentiles(const std::vector<double>& values, const std::vector<double>& ps,
                                            const BootstrapOptions& options) {
  std::vector<std::vector<double>> groups;
  groups.reserve(values.size());
  for (double v : values) groups.push_back({v});
  return bootstrap_percentiles(groups, ps, options);
}

Interval bootstrap_ratio_interval(const std::vector<double>& numerators, const std::vector<double>& denominators,
                                  double measured, const BootstrapOptions& options) {
  Interval out{measured, measured, measured};
  const size_t n = std::min(numerators.size(), denominators.size());
  double num = 0, den = 0;
  for (size_t i = 0; i < n; ++i) {
    num += numerators[i];
    den += denominators[i];
  }
  if (n == 0 || den <= 0 || num <= 0) return out;
  const double full = num / den;
  SplitMix64 rng(options.seed);
  const int resamples = std::max(options.resamples, 1);
  std::vector<double> ratios;
  ratios.reserve(static_cast<size_t>(resamples));
  for (int r = 0; r < resamples; ++r) {
    double rn = 0, rd = 0;
    for (size_t i = 0; i < n; ++i) {
      const uint64_t k = rng.below(n);
      rn += numerators[k];
      rd += denominators[k];
    }
    ratios.push_back(rd > 0 ? rn / rd * (measured / full) : measured);
  }
  return interval_from_replicates(measured, std::move(ratios), options.confidence);
}

Interval t_interval(const std::vector<double>& values, double confidence) {
  Interval out;
  if (values.empty()) return out;
  const double n = static_cast<double>(values.size());
  double mean = 0;
  for (double v : values) mean += v;
  mean /= n;
  out = {mean, mean, mean};
  if (values.size() < 2) return out;
  double ss = 0;
  for (double v : values) ss += (v - mean) * (v - mean);
  const double sd = std::sqrt(ss / (n - 1));
  const int df = static_cast<int>(values.size()) - 1;
  // The table is for 95 %; other levels scale by the normal quantiles' ratio (close enough for reports).
  const double t = t_quantile_95(df) * z_quantile(confidence) / 1.96;
  out.lower = mean - t * sd / std::sqrt(n);
  out.upper = mean + t * sd / std::sqrt(n);
  return out;
}

bool intervals_overlap(const Interval& a, const Interval& b) { return a.lower <= b.upper && b.lower <= a.upper; }

}  // namespace crosspoint::analysis
