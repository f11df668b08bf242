#include "analysis/crossover.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace crosspoint::analysis {

const std::vector<Metric>& all_metrics() {
  static const std::vector<Metric> metrics = {
      Metric::kMedianTpot, Metric::kP99Tpot,    Metric::kMedianItl, Metric::kP99Itl,           Metric::kMedianTtft,
      Metric::kP99Ttft,    Metric::kMedianE2el, Metric::kP99E2el,   Metric::kOutputThroughput, Metric::kGoodput};
  return metrics;
}

std::string_view metric_name(Metric metric) {
  switch (metric) {
    case Metric::kMedianTpot: return "median TPOT";
    case Metric::kP99Tpot: return "p99 TPOT";
    case Metric::kMedianItl: return "median ITL";
    case Metric::kP99Itl: return "p99 ITL";
    case Metric::kMedianTtft: return "median TTFT";
    case Metric::kP99Ttft: return "p99 TTFT";
    case Metric::kMedianE2el: return "median E2E latency";
    case Metric::kP99E2el: return "p99 E2E latency";
    case Metric::kOutputThroughput: return "output throughput";
    case Metric::kGoodput: return "goodput";
  }
  return "unknown";
}

std::string_view metric_unit(Metric metric) {
  if (metric == Metric::kOutputThroughput) return "tok/s";
  if (metric == Metric::kGoodput) return "req/s";
  return "ms";
}

bool lower_is_better(Metric metric) { return metric != Metric::kOutputThroughput && metric != Metric::kGoodput; }

std::optional<double> metric_value(const CellMeasurement& cell, Metric metric) {
  switch (metric) {
    case Metric::kMedianTpot: return cell.median_tpot_ms;
    case Metric::kP99Tpot: return cell.p99_tpot_ms;
    case Metric::kMedianItl: return cell.median_itl_ms;
    case Metric::kP99Itl: return cell.p99_itl_ms;
    case Metric::kMedianTtft: return cell.median_ttft_ms;
    case Metric::kP99Ttft: return cell.p99_ttft_ms;
    case Metric::kMedianE2el: return cell.median_e2el_ms;
    case Metric::kP99E2el: return cell.p99_e2el_ms;
    case Metric::kOutputThroughput: return cell.output_throughput_tok_s;
    case Metric::kGoodput: return cell.request_goodput_req_s;
  }
  return std::nullopt;
}

std::optional<Interval> metric_interval(const CellMeasurement& cell, Metric metric) {
  switch (metric) {
    case Metric::kMedianTpot: return cell.median_tpot_ci;
    case Metric::kP99Tpot: return cell.p99_tpot_ci;
    case Metric::kMedianItl: return cell.median_itl_ci;
    case Metric::kP99Itl: return cell.p99_itl_ci;
    case Metric::kMedianTtft: return cell.median_ttft_ci;
    case Metric::kP99Ttft: return cell.p99_ttft_ci;
    case Metric::kMedianE2el: return cell.median_e2el_ci;
    case Metric::kP99E2el: return cell.p99_e2el_ci;
    case Metric::kOutputThroughput: return cell.output_throughput_ci;
    case Metric::kGoodput: return std::nullopt;
  }
  return std::nullopt;
}

std::vector<LevelWinner> winners_by_concurrency(const std::vector<CellMeasurement>& cells, Metric metric,
                                                double tie_tolerance) {
  // concurrency -> (precision, value, cell); the first cell of a (precision, concurrency) pair wins.
  struct Entry {
    std::string first;
    double second;
    const CellMeasurement* cell;
  };
  std::map<double, std::vector<Entry>> levels;
  for (const CellMeasurement& cell : cells) {
    const std::optional<double> value = metric_value(cell, metric);
    if (!value) continue;
    auto& entries = levels[cell.concurrency];
    const bool seen =
        std::any_of(entries.begin(), entries.end(), [&](const auto& entry) { return entry.first == cell.precision; });
    if (!seen) entries.push_back({cell.precision, *value, &cell});
  }
  const bool lower = lower_is_better(metric);
  std::vector<LevelWinner> out;
  for (auto& [concurrency, entries] : levels) {
    if (entries.size() < 2) continue;
    std::stable_sort(entries.begin(), entries.end(), [lower](const auto& a, const auto& b) {
      return lower ? a.second < b.second : a.second > b.second;
    });
    LevelWinner level;
    level.concurrency = concurrency;
    level.winner = entries[0].first;
    level.leader = entries[0].first;
    level.runner_up = entries[1].first;
    level.best_value = entries[0].second;
    level.runner_up_value = entries[1].second;
    // Advantage relative to the better value: (37.27 - 30.04) / 30.04 = 24 %.
    const double best = std::abs(level.best_value);
    level.margin = best > 0 ? std::abs(level.runner_up_value - level.best_value) / best : 0;
    level.best_interval = metric_interval(*entries[0].cell, metric);
    level.runner_up_interval = metric_interval(*entries[1].cell, metric);
    level.interfered = entries[0].cell->interfered || entries[1].cell->interfered;
    if (level.margin <= tie_tolerance) {
      level.tie = true;
    } else if (level.best_interval && level.runner_up_interval &&
               intervals_overlap(*level.best_interval, *level.runner_up_interval)) {
      level.tie = true;
      level.not_separable = true;
    }
    if (level.tie) level.winner.clear();
    const std::optional<Interval> leader_interval = level.best_interval;
    for (const Entry& entry : entries) {
      level.ranked.push_back(entry.first);
      const double margin = best > 0 ? std::abs(entry.second - level.best_value) / best : 0;
      const std::optional<Interval> interval = metric_interval(*entry.cell, metric);
      const bool overlaps = leader_interval && interval && intervals_overlap(*leader_interval, *interval);
      if (entry.cell == entries[0].cell || margin <= tie_tolerance || overlaps) level.contenders.push_back(entry.first);
    }
    out.push_back(level);
  }
  return out;
}

std::vector<Crossover> find_crossovers(const std::vector<CellMeasurement>& cells, Metric metric, double tie_tolerance) {
  std::vector<Crossover> out;
  const LevelWinner* previous = nullptr;
  const std::vector<LevelWinner> levels = winners_by_concurrency(cells, metric, tie_tolerance);
  for (const LevelWinner& level : levels) {
    if (level.tie) continue;
    // A level where the standing winner was not measured (its cell failed or is missing)
    // cannot show it losing: skipped, as a tie is.
    if (previous != nullptr &&
        std::find(level.ranked.begin(), level.ranked.end(), previous->winner) == level.ranked.end())
      continue;
    if (previous != nullptr && previous->winner != level.winner) {
      out.push_back({metric, previous->concurrency, level.concurrency, previous->winner, level.winner});
    }
    previous = &level;
  }
  return out;
}

std::optional<double> first_concurrency_lead_lost(const std::vector<CellMeasurement>& cells, Metric metric,
                                                  const std::string& leader, double tie_tolerance) {
  for (const LevelWinner& level : winners_by_concurrency(cells, metric, tie_tolerance)) {
    if (level.tie || level.winner != leader) return level.concurrency;
  }
  return std::nullopt;
}

BisectionStep next_bisection_probe(double lower, double upper, double resolution) {
  BisectionStep step;
  if (upper < lower) std::swap(lower, upper);
  // Two adjacent integers cannot be split further, whatever the resolution.
  if (upper - lower <= std::max(resolution, 1.0)) {
    step.done = true;
    return step;
  }
  double probe = std::round(std::sqrt(std::max(lower, 1.0) * upper));
  if (probe <= lower || probe >= upper) probe = std::floor((lower + upper) / 2);
  step.next_concurrency = probe;
  return step;
}

std::vector<double> plan_crossover_probes(const std::vector<CellMeasurement>& cells, Metric metric, double resolution,
                                          double tie_tolerance) {
  std::vector<double> probes;
  std::vector<double> measured;
  for (const LevelWinner& level : winners_by_concurrency(cells, metric, tie_tolerance))
    measured.push_back(level.concurrency);
  for (const Crossover& crossover : find_crossovers(cells, metric, tie_tolerance)) {
    double lower = crossover.concurrency_below;
    double upper = crossover.concurrency_above;
    // A tie measured inside the bracket is not a probe to repeat: keep halving the wider side.
    BisectionStep step = next_bisection_probe(lower, upper, resolution);
    while (!step.done && std::find(measured.begin(), measured.end(), step.next_concurrency) != measured.end()) {
      const double probe = step.next_concurrency;
      if (std::log(probe / std::max(lower, 1.0)) >= std::log(upper / probe)) {
        upper = probe;
      } else {
        lower = probe;
      }
      step = next_bisection_probe(lower, upper, resolution);
    }
    if (!step.done) probes.push_back(step.next_concurrency);
  }
  std::sort(probes.begin(), probes.end());
  probes.erase(std::unique(probes.begin(), probes.end()), probes.end());
  return probes;
}

}  // namespace crosspoint::analysis
