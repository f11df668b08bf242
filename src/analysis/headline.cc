#include "analysis/headline.h"

#include <algorithm>
#include <map>
#include <utility>

namespace crosspoint::analysis {

std::string weight_group_of(const StudyResults& study, const std::string& label) {
  const PrecisionSetup* setup = study.find_precision(label);
  if (setup == nullptr) return label;
  // Several labels of one weight precision: the setups share it; name the group by it. A split
  // over N ranks uses other hardware, so it is a group of its own ("fp16-tp2").
  size_t num_same = 0;
  for (const PrecisionSetup& other : study.precisions)
    num_same += other.precision == setup->precision && other.tensor_parallel_size == setup->tensor_parallel_size;
  const std::string group =
      std::string(precision_name(setup->precision)) +
      (setup->tensor_parallel_size > 1 ? "-tp" + std::to_string(setup->tensor_parallel_size) : "");
  return num_same > 1 ? group : label;
}

HeadlineMetric headline_metric(const StudyResults& study, const std::vector<CellMeasurement>& cells, Metric metric,
                               double tie_tolerance) {
  // One weight precision served several ways (a prefix-caching study of fp16): the ways are
  // what there is to compare.
  std::vector<std::string> groups;
  for (const CellMeasurement& cell : cells) {
    const std::string group = weight_group_of(study, cell.precision);
    if (std::find(groups.begin(), groups.end(), group) == groups.end()) groups.push_back(group);
  }
  const bool one_weight_precision = groups.size() < 2;
  auto group_of = [&](const std::string& label) {
    return one_weight_precision ? label : weight_group_of(study, label);
  };
  // (group, level) -> the best cell of that weight precision there.
  std::map<std::pair<std::string, double>, const CellMeasurement*> best;
  std::vector<std::pair<std::string, double>> order;  // first appearance, so labels keep the study's order
  for (const CellMeasurement& cell : cells) {
    const auto value = metric_value(cell, metric);
    if (!value) continue;
    const std::pair<std::string, double> key{group_of(cell.precision), cell.concurrency};
    auto it = best.find(key);
    if (it == best.end()) {
      best[key] = &cell;
      order.push_back(key);
      continue;
    }
    const double held = *metric_value(*it->second, metric);
    if (lower_is_better(metric) ? *value < held : *value > held) it->second = &cell;
  }
  std::vector<CellMeasurement> reduced;  // labelled by group, so a crossover is between weight precisions
  for (const auto& key : order) {
    CellMeasurement cell = *best[key];
    cell.precision = key.first;
    reduced.push_back(std::move(cell));
  }
  auto label_at = [&](const std::string& group, double level) {
    auto it = best.find({group, level});
    return it == best.end() ? group : it->second->precision;
  };
  HeadlineMetric out;
  out.metric = metric;
  out.winners = winners_by_concurrency(reduced, metric, tie_tolerance);
  for (LevelWinner& w : out.winners) {
    for (std::string* name : {&w.winner, &w.leader, &w.runner_up}) {
      if (!name->empty()) *name = label_at(*name, w.concurrency);
    }
    for (std::string& name : w.contenders) name = label_at(name, w.concurrency);
    for (std::string& name : w.ranked) name = label_at(name, w.concurrency);
  }
  out.crossovers = find_crossovers(reduced, metric, tie_tolerance);
  for (Crossover& c : out.crossovers) {
    c.winner_below = label_at(c.winner_below, c.concurrency_below);
    c.winner_above = label_at(c.winner_above, c.concurrency_above);
  }
  return out;
}

}  // namespace crosspoint::analysis
