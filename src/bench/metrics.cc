#include "bench/metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "common/status.h"

namespace crosspoint::bench {

namespace {
const std::vector<double> kZero = {0.0};
const std::vector<double>& or_zero(const std::vector<double>& v) { return v.empty() ? kZero : v; }
}  // namespace

double mean_of(const std::vector<double>& values) {
  const auto& v = or_zero(values);
  double sum = 0;
  for (double x : v) sum += x;
  return sum / static_cast<double>(v.size());
}

double std_of(const std::vector<double>& values) {
  const auto& v = or_zero(values);
  const double mean = mean_of(v);
  double sum_sq = 0;
  for (double x : v) sum_sq += (x - mean) * (x - mean);
  return std::sqrt(sum_sq / static_cast<double>(v.size()));
}

double percentile_of(const std::vector<double>& values, double p) {
  CROSSPOINT_CHECK(p >= 0 && p <= 100, "percentile must be in [0, 100]");
  std::vector<double> sorted = or_zero(values);
  std::sort(sorted.begin(), sorted.end());
  const double h = static_cast<double>(sorted.size() - 1) * p / 100.0;
  const size_t lo = static_cast<size_t>(std::floor(h));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (h - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

double median_of(const std::vector<double>& values) { return percentile_of(values, 50.0); }

MetricStats compute_stats(const std::vector<double>& values_s, const std::vector<double>& percentiles) {
  MetricStats stats;
  stats.mean_ms = mean_of(values_s) * 1000.0;
  stats.median_ms = median_of(values_s) * 1000.0;
  stats.std_ms = std_of(values_s) * 1000.0;
  for (double p : percentiles) stats.percentiles_ms.emplace_back(p, percentile_of(values_s, p) * 1000.0);
  return stats;
}

std::string percentile_key_text(double p) {
  if (p == std::floor(p)) return std::to_string(static_cast<long long>(p));
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.15g", p);  // Python's str(float) for short decimals
  return buffer;
}

namespace {

// Busiest 1 s bucket of token events, counted from the earliest successful start.
double peak_output_tokens_per_s(const std::vector<RequestRecord>& records) {
  double min_start = 0, max_end = 0;
  bool any = false;
  for (const auto& r : records) {
    if (!r.success) continue;
    if (!any || r.start_s < min_start) min_start = r.start_s;
    if (!any || r.start_s + r.latency_s > max_end) max_end = r.start_s + r.latency_s;
    any = true;
  }
  if (!any) return 0;
  const size_t num_buckets = static_cast<size_t>(std::ceil(max_end - min_start)) + 1;
  std::vector<double> tokens_per_bucket(num_buckets, 0.0);
  for (const auto& r : records) {
    if (!r.success) continue;
    double t = r.start_s + r.ttft_s;
    auto add = [&](double time) {
      const long long bucket = static_cast<long long>(time - min_start);  // truncation, as int()
      if (bucket >= 0 && static_cast<size_t>(bucket) < num_buckets) tokens_per_bucket[bucket] += 1;
    };
    add(t);
    for (double gap : r.itl_s) {
      t += gap;
      add(t);
    }
  }
  return *std::max_element(tokens_per_bucket.begin(), tokens_per_bucket.end());
}

// Sweep over half-open [start, start + latency); at equal times departures come first.
int peak_concurrency(const std::vector<RequestRecord>& records) {
  std::vector<std::pair<double, int>> events;
  for (const auto& r : records) {
    if (!r.success) continue;
    events.emplace_back(r.start_s, +1);
    events.emplace_back(r.start_s + r.latency_s, -1);
  }
  std::sort(events.begin(), events.end());
  int current = 0, peak = 0;
  for (const auto& [time, delta] : events) {
    current += delta;
    peak = std::max(peak, current);
  }
  return peak;
}

}  // namespace

BenchMetrics compute_metrics(const std::vector<RequestRecord>& records, double duration_s,
                             const std::vector<double>& percentiles, const GoodputSlos& slos) {
  CROSSPOINT_CHECK(duration_s > 0, "benchmark duration must be positive");
  BenchMetrics m;
  std::vector<double> ttfts, tpots, itls, e2els;
  m.is_good.assign(records.size(), false);
  m.tpot_s.assign(records.size(), 0.0);
  for (size_t i = 0; i < records.size(); ++i) {
    const RequestRecord& r = records[i];
    if (!r.success) {
      ++m.failed;
      continue;
    }
    ++m.completed;
    m.total_input_tokens += r.prompt_len;
    m.total_output_tokens += r.output_len;
    double tpot = 0;  // requests with <= 1 output token count as TPOT 0 for goodput only
    if (r.output_len > 1) {
      tpot = (r.latency_s - r.ttft_s) / (r.output_len - 1);
      tpots.push_back(tpot);
    }
    m.tpot_s[i] = tpot;
    itls.insert(itls.end(), r.itl_s.begin(), r.itl_s.end());
    ttfts.push_back(r.ttft_s);
    e2els.push_back(r.latency_s);
    // vLLM: good when slo_s >= value_s for every given SLO (inclusive).
    bool good = true;
    if (slos.ttft_ms && !(*slos.ttft_ms / 1000.0 >= r.ttft_s)) good = false;
    if (slos.tpot_ms && !(*slos.tpot_ms / 1000.0 >= tpot)) good = false;
    if (slos.e2el_ms && !(*slos.e2el_ms / 1000.0 >= r.latency_s)) good = false;
    m.is_good[i] = slos.any() && good;
    if (m.is_good[i]) ++m.good_requests;
  }
  m.request_throughput = m.completed / duration_s;
  m.request_goodput = m.good_requests / duration_s;
  m.output_throughput = static_cast<double>(m.total_output_tokens) / duration_s;
  m.total_token_throughput = static_cast<double>(m.total_input_tokens + m.total_output_tokens) / duration_s;
  m.max_output_tokens_per_s = peak_output_tokens_per_s(records);
  m.max_concurrent_requests = peak_concurrency(records);
  m.ttft = compute_stats(ttfts, percentiles);
  m.tpot = compute_stats(tpots, percentiles);
  m.itl = compute_stats(itls, percentiles);
  m.e2el = compute_stats(e2els, percentiles);
  return m;
}

}  // namespace crosspoint::bench
