#include "sweep/sample_growth.h"

#include <algorithm>
#include <set>

namespace crosspoint::sweep {

using analysis::CellMeasurement;
using analysis::Metric;

const std::vector<Metric>& deciding_metrics() {
  static const std::vector<Metric> metrics = {Metric::kMedianTpot, Metric::kOutputThroughput};
  return metrics;
}

double run_cost_s(const CellMeasurement& cell) {
  double wall = 0;
  for (const auto& record : cell.machine) wall += record.wall_s;
  const int runs = std::max(cell.num_runs, 1);
  const double per_run =
      wall > 0 && static_cast<int>(cell.machine.size()) == runs ? wall / runs : cell.duration_s / runs;
  return per_run * 1.2;
}

std::vector<UndecidedComparison> undecided_comparisons(const std::vector<CellMeasurement>& cells,
                                                       double tie_tolerance) {
  std::vector<UndecidedComparison> out;
  for (Metric metric : deciding_metrics()) {
    for (const analysis::LevelWinner& level : analysis::winners_by_concurrency(cells, metric, tie_tolerance)) {
      if (level.not_separable) out.push_back({metric, level.concurrency, level.leader, level.runner_up});
    }
  }
  return out;
}

SampleGrowthPlan plan_sample_growth(const SampleGrowthInput& in) {
  SampleGrowthPlan plan;
  plan.undecided = undecided_comparisons(in.cells, in.tie_tolerance);
  auto find = [&](const std::string& precision, double concurrency) -> const CellMeasurement* {
    for (const CellMeasurement& c : in.cells) {
      if (c.precision == precision && c.concurrency == concurrency) return &c;
    }
    return nullptr;
  };
  // Each comparison needs one more run of both of its cells; price them and take the cheapest first.
  struct Option {
    double cost;
    std::vector<const CellMeasurement*> cells;
  };
  std::vector<Option> options;
  for (const UndecidedComparison& u : plan.undecided) {
    const CellMeasurement* a = find(u.leader, u.concurrency);
    const CellMeasurement* b = find(u.runner_up, u.concurrency);
    if (a == nullptr || b == nullptr) continue;
    if (a->num_runs >= in.max_runs_per_cell || b->num_runs >= in.max_runs_per_cell) {
      plan.runs_capped = true;
      continue;
    }
    options.push_back({run_cost_s(*a) + run_cost_s(*b), {a, b}});
  }
  std::stable_sort(options.begin(), options.end(), [](const Option& x, const Option& y) { return x.cost < y.cost; });
  std::set<const CellMeasurement*> chosen;
  std::set<std::string> servers;
  double spent = 0;
  bool left_out = false;
  for (const Option& option : options) {
    double extra = 0;
    std::set<std::string> new_servers;
    for (const CellMeasurement* c : option.cells) {
      if (chosen.count(c)) continue;
      extra += run_cost_s(*c);
      if (!servers.count(c->precision)) new_servers.insert(c->precision);
    }
    extra += in.server_start_s * static_cast<double>(new_servers.size());
    if (spent + extra > in.remaining_s) {
      left_out = true;
      continue;
    }
    spent += extra;
    for (const CellMeasurement* c : option.cells) chosen.insert(c);
    servers.insert(new_servers.begin(), new_servers.end());
  }
  for (const CellMeasurement* c : chosen) plan.cells.push_back({c->precision, static_cast<int>(c->concurrency)});
  std::sort(plan.cells.begin(), plan.cells.end(), [](const CellToGrow& x, const CellToGrow& y) {
    return x.precision != y.precision ? x.precision < y.precision : x.concurrency < y.concurrency;
  });
  plan.estimated_s = spent;
  plan.budget_too_small = left_out;
  return plan;
}

}  // namespace crosspoint::sweep
