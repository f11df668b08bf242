#include "analysis/slo.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "analysis/bootstrap.h"

namespace crosspoint::analysis {

namespace {

struct Limit {
  const std::optional<double>* value;
  Metric median_metric;  // names the metric: kMedianTtft, kMedianTpot, kMedianE2el
  const char* name;
};

std::vector<Limit> limits_of(const ServiceLevelObjective& slo) {
  return {{&slo.ttft_ms, Metric::kMedianTtft, "TTFT"},
          {&slo.tpot_ms, Metric::kMedianTpot, "TPOT"},
          {&slo.e2el_ms, Metric::kMedianE2el, "E2E latency"}};
}

std::string percentile_name(double p) { return p == 50 ? "median" : fmt::format("p{:g}", p); }

// Per-request TPOT aligned with the TTFT and latency lists (a one-token reply: 0, as vLLM).
double request_tpot_ms(const CellMeasurement& cell, size_t i) {
  const double tokens = cell.request_output_tokens[i];
  return tokens > 1 ? (cell.request_e2el_ms[i] - cell.request_ttft_ms[i]) / (tokens - 1) : 0;
}

}  // namespace

ServiceLevelObjective default_slo() {
  ServiceLevelObjective slo;
  slo.ttft_ms = 1000;
  slo.percentile = 99;
  slo.is_default = true;
  return slo;
}

std::string describe_slo(const ServiceLevelObjective& slo) {
  std::string text;
  for (const Limit& limit : limits_of(slo)) {
    if (!*limit.value) continue;
    text += fmt::format("{}{} {} ≤ {:g} ms", text.empty() ? "" : " and ", percentile_name(slo.percentile), limit.name,
                        **limit.value);
  }
  return text;
}

std::optional<double> slo_goodput(const CellMeasurement& cell, const ServiceLevelObjective& slo) {
  const size_t n = cell.request_e2el_ms.size();
  if (n == 0 || cell.request_ttft_ms.size() != n || cell.request_output_tokens.size() != n || !(cell.duration_s > 0))
    return std::nullopt;
  size_t good = 0;
  for (size_t i = 0; i < n; ++i) {
    const bool ok = (!slo.ttft_ms || cell.request_ttft_ms[i] <= *slo.ttft_ms) &&
                    (!slo.tpot_ms || request_tpot_ms(cell, i) <= *slo.tpot_ms) &&
                    (!slo.e2el_ms || cell.request_e2el_ms[i] <= *slo.e2el_ms);
    good += ok ? 1 : 0;
  }
  return static_cast<double>(good) / cell.duration_s;
}

std::optional<double> slo_percentile_ms(const CellMeasurement& cell, const ServiceLevelObjective& slo,
                                        Metric median_metric) {
  if (slo.percentile == 99) {
    const Metric p99 = median_metric == Metric::kMedianTtft   ? Metric::kP99Ttft
                       : median_metric == Metric::kMedianTpot ? Metric::kP99Tpot
                                                              : Metric::kP99E2el;
    if (auto v = metric_value(cell, p99)) return v;
  }
  if (slo.percentile == 50) {
    if (auto v = metric_value(cell, median_metric)) return v;
  }
  const std::vector<double>& values = median_metric == Metric::kMedianTtft   ? cell.request_ttft_ms
                                      : median_metric == Metric::kMedianTpot ? cell.request_tpot_ms
                                                                             : cell.request_e2el_ms;
  if (values.empty()) return std::nullopt;
  return linear_percentile(values, slo.percentile);
}

std::optional<bool> meets_slo(const CellMeasurement& cell, const ServiceLevelObjective& slo) {
  for (const Limit& limit : limits_of(slo)) {
    if (!*limit.value) continue;
    const auto v = slo_percentile_ms(cell, slo, limit.median_metric);
    if (!v) return std::nullopt;
    if (*v > **limit.value) return false;
  }
  return true;
}

void apply_slo_goodput(std::vector<CellMeasurement>& cells, const ServiceLevelObjective& slo) {
  for (CellMeasurement& cell : cells) {
    if (auto goodput = slo_goodput(cell, slo)) cell.request_goodput_req_s = goodput;
  }
}

SloAnalysis analyze_slo(const std::vector<CellMeasurement>& cells, const ServiceLevelObjective& slo) {
  SloAnalysis out;
  out.slo = slo;
  std::vector<std::string> labels;
  std::map<std::string, std::vector<const CellMeasurement*>> by_label;
  for (const CellMeasurement& cell : cells) {
    if (cell.concurrency <= 0) continue;
    if (!by_label.count(cell.precision)) labels.push_back(cell.precision);
    by_label[cell.precision].push_back(&cell);
  }
  for (const std::string& label : labels) {
    std::vector<const CellMeasurement*> levels = by_label[label];
    std::sort(levels.begin(), levels.end(),
              [](const CellMeasurement* a, const CellMeasurement* b) { return a->concurrency < b->concurrency; });
    SloCapacity capacity;
    capacity.label = label;
    for (const CellMeasurement* cell : levels) {
      const std::optional<bool> ok = meets_slo(*cell, slo);
      if (!ok) {  // a level without the data neither extends nor ends the run
        capacity.no_data_levels.push_back(cell->concurrency);
        continue;
      }
      if (!*ok) {
        capacity.first_failing = cell->concurrency;
        double worst_ratio = 0;
        for (const Limit& limit : limits_of(slo)) {
          if (!*limit.value) continue;
          const auto v = slo_percentile_ms(*cell, slo, limit.median_metric);
          if (v && *v / **limit.value > worst_ratio) {
            worst_ratio = *v / **limit.value;
            capacity.failing_value_ms = v;
            capacity.failing_metric = percentile_name(slo.percentile) + " " + limit.name;
          }
        }
        break;
      }
      capacity.max_concurrency = cell->concurrency;
      capacity.goodput_req_s = cell->request_goodput_req_s;
    }
    out.capacity.push_back(capacity);
  }
  for (const SloCapacity& c : out.capacity) {
    if (!c.max_concurrency) continue;
    if (!out.most_load_concurrency || *c.max_concurrency > *out.most_load_concurrency) {
      out.most_load_concurrency = c.max_concurrency;
      out.most_load = {c.label};
    } else if (*c.max_concurrency == *out.most_load_concurrency) {
      out.most_load.push_back(c.label);
    }
  }
  return out;
}

}  // namespace crosspoint::analysis
