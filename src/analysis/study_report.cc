#include "analysis/study_report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>

#include "analysis/crossover_explanation.h"
#include "analysis/first_screen.h"
#include "analysis/html_page.h"
#include "analysis/markdown_table.h"
#include "analysis/svg_plot.h"

namespace crosspoint::analysis {

namespace {

// Markdown and HTML written side by side.
class ReportBuilder {
 public:
  void heading(const std::string& text) {
    md_ += "\n## " + text + "\n\n";
    html_ += "<h2>" + xml_escape(text) + "</h2>\n";
  }
  void paragraph(const std::string& text) {
    md_ += text + "\n\n";
    html_ += "<p>" + xml_escape(text) + "</p>\n";
  }
  void bullets(const std::vector<std::string>& items) {
    html_ += "<ul class=\"findings\">\n";
    for (const std::string& item : items) {
      md_ += "- " + item + "\n";
      html_ += "<li>" + xml_escape(item) + "</li>\n";
    }
    md_ += "\n";
    html_ += "</ul>\n";
  }
  void table(const TextTable& t) {
    md_ += render_markdown_table(t) + "\n";
    html_ += render_html_table(t);
  }
  void figures(const std::vector<std::pair<std::string, std::string>>& named_svgs, ReportFiles* files) {
    html_ += "<div class=\"figures\">\n";
    for (const auto& [name, svg] : named_svgs) {
      md_ += "![" + name + "](" + name + ")\n";
      html_ += svg;
      files->figures.emplace_back(name, svg);
    }
    md_ += "\n";
    html_ += "</div>\n";
  }
  void raw(const std::string& md, const std::string& html) {
    md_ += md;
    html_ += html;
  }
  const std::string& md() const { return md_; }
  const std::string& html() const { return html_; }

 private:
  std::string md_, html_;
};

std::vector<std::string> labels_of(const StudyResults& study) {
  std::vector<std::string> labels;
  for (const CellMeasurement& cell : study.cells) {
    if (std::find(labels.begin(), labels.end(), cell.precision) == labels.end()) labels.push_back(cell.precision);
  }
  return labels;
}

std::vector<double> concurrencies_of(const StudyResults& study) {
  std::vector<double> levels;
  for (const CellMeasurement& cell : study.cells) levels.push_back(cell.concurrency);
  std::sort(levels.begin(), levels.end());
  levels.erase(std::unique(levels.begin(), levels.end()), levels.end());
  return levels;
}

std::string conc_label(double c) { return c > 0 ? fmt::format("conc {:g}", c) : std::string("unbounded"); }

std::string number(double v, int decimals) { return fmt::format("{:.{}f}", v, decimals); }

// "2.19 [2.15, 2.24]", or "2.19" without an interval.
std::string with_interval(double v, const std::optional<Interval>& interval, int decimals) {
  if (!interval) return number(v, decimals);
  return fmt::format("{:.{}f} [{:.{}f}, {:.{}f}]", v, decimals, interval->lower, decimals, interval->upper, decimals);
}

int decimals_for(Metric metric) {
  switch (metric) {
    case Metric::kP99Ttft:
    case Metric::kP99E2el:
    case Metric::kMedianE2el: return 0;
    case Metric::kP99Itl: return 1;
    default: return 2;
  }
}

// precision x concurrency table of one value; "-" where a cell lacks it.
template <typename Cell>
TextTable pivot(const std::string& corner, const std::vector<std::string>& labels, const std::vector<double>& levels,
                const std::vector<Cell>& cells, const std::function<std::optional<std::string>(const Cell&)>& value,
                const std::function<std::string(const Cell&)>& label_of,
                const std::function<double(const Cell&)>& conc_of) {
  TextTable t;
  t.header.push_back(corner);
  t.right_align.push_back(false);
  for (double c : levels) {
    t.header.push_back(conc_label(c));
    t.right_align.push_back(true);
  }
  for (const std::string& label : labels) {
    std::vector<std::string> row = {label};
    for (double c : levels) {
      std::string text = "-";
      for (const Cell& cell : cells) {
        if (label_of(cell) == label && conc_of(cell) == c) {
          if (auto v = value(cell)) text = *v;
          break;
        }
      }
      row.push_back(text);
    }
    t.rows.push_back(row);
  }
  return t;
}

TextTable measurement_pivot(const StudyResults& study, const std::string& corner,
                            const std::function<std::optional<double>(const CellMeasurement&)>& get, int decimals) {
  return pivot<CellMeasurement>(
      corner, labels_of(study), concurrencies_of(study), study.cells,
      [&](const CellMeasurement& c) -> std::optional<std::string> {
        auto v = get(c);
        return v ? std::optional<std::string>(number(*v, decimals)) : std::nullopt;
      },
      [](const CellMeasurement& c) { return c.precision; }, [](const CellMeasurement& c) { return c.concurrency; });
}

// A metric per precision x concurrency with its interval; "*" marks a cell measured under interference.
TextTable metric_pivot(const StudyResults& study, const std::string& corner, Metric metric) {
  return pivot<CellMeasurement>(
      corner, labels_of(study), concurrencies_of(study), study.cells,
      [&](const CellMeasurement& c) -> std::optional<std::string> {
        auto v = metric_value(c, metric);
        if (!v) return std::nullopt;
        return with_interval(*v, metric_interval(c, metric), decimals_for(metric)) + (c.interfered ? " *" : "");
      },
      [](const CellMeasurement& c) { return c.precision; }, [](const CellMeasurement& c) { return c.concurrency; });
}

TextTable roofline_pivot(const StudyResults& study, const StudyAnalysis& analysis, const std::string& corner,
                         const std::function<std::optional<std::string>(const RooflineCell&)>& get) {
  return pivot<RooflineCell>(
      corner, labels_of(study), concurrencies_of(study), analysis.roofline, get,
      [](const RooflineCell& c) { return c.precision; }, [](const RooflineCell& c) { return c.concurrency; });
}

LinePlot metric_plot(const StudyResults& study, const std::string& title, const std::string& y_label,
                     const std::vector<std::pair<Metric, bool>>& metrics_dashed) {
  LinePlot plot;
  plot.title = title;
  plot.x_label = "concurrency (log scale)";
  plot.y_label = y_label;
  for (const auto& [metric, dashed] : metrics_dashed) {
    const std::vector<std::string> labels = labels_of(study);
    for (size_t i = 0; i < labels.size(); ++i) {
      const std::string& label = labels[i];
      PlotSeries s;
      s.name = metrics_dashed.size() > 1 ? label + " " + std::string(metric_name(metric)) : label;
      s.dashed = dashed;
      s.colour_index = static_cast<int>(i);  // one colour per precision across metrics
      for (const CellMeasurement& cell : study.cells) {
        auto v = metric_value(cell, metric);
        if (cell.precision == label && v && cell.concurrency > 0) {
          s.points.emplace_back(cell.concurrency, *v);
          if (auto ci = metric_interval(cell, metric))
            s.error_bars.emplace_back(cell.concurrency, ci->lower, ci->upper);
        }
      }
      if (!s.points.empty()) plot.series.push_back(s);
    }
  }
  return plot;
}

}  // namespace

std::string format_with_interval(double value, const std::optional<Interval>& interval, int decimals) {
  return with_interval(value, interval, decimals);
}

std::string tied_names(const LevelWinner& w) {
  std::vector<std::string> names = w.contenders;
  if (names.size() < 2) {
    names.clear();
    for (const std::string* name : {&w.leader, &w.runner_up}) {
      if (!name->empty()) names.push_back(*name);
    }
  }
  return names.size() < 2 ? std::string() : fmt::format("{}", fmt::join(names, ", "));
}

std::string describe_level(const LevelWinner& w, Metric metric) {
  const int decimals = decimals_for(metric);
  const std::string unit(metric_unit(metric));
  // The two best with their intervals: "w4a16 2.19 ms [2.15, 2.24] vs fp16 2.40 ms [2.31, 2.52]".
  auto value = [&](const std::string& name, double v, const std::optional<Interval>& ci) {
    if (!ci) return fmt::format("{} {:.{}f} {}", name, v, decimals, unit);
    return fmt::format("{} {:.{}f} {} [{:.{}f}, {:.{}f}]", name, v, decimals, unit, ci->lower, decimals, ci->upper,
                       decimals);
  };
  std::string text;
  const bool have_intervals = w.best_interval && w.runner_up_interval;
  if (w.not_separable) {
    text = fmt::format("not separable at {:g} at this sample size (intervals overlap: {} vs {})", w.concurrency,
                       value(w.leader, w.best_value, w.best_interval),
                       value(w.runner_up, w.runner_up_value, w.runner_up_interval));
  } else if (w.tie) {
    const std::string names = tied_names(w);
    text = fmt::format("tie at {:g} ({:.1f} %{})", w.concurrency, w.margin * 100, names.empty() ? "" : ": " + names);
  } else if (have_intervals) {
    text = fmt::format("{} at {:g} ({} vs {}, by {:.1f} %)", w.winner, w.concurrency,
                       value(w.winner, w.best_value, w.best_interval),
                       value(w.runner_up, w.runner_up_value, w.runner_up_interval), w.margin * 100);
  } else {
    text = fmt::format("{} at {:g} (by {:.1f} %)", w.winner, w.concurrency, w.margin * 100);
  }
  if (w.interfered) text += " [measured under interference]";
  return text;
}

namespace {

// The sample behind every number: runs and requests per cell, how the intervals were made,
// and the cells the busy-machine guard marked.
void add_measurement_quality(ReportBuilder& r, const StudyResults& study, const StudyAnalysis& analysis) {
  const bool any_requests = std::any_of(study.cells.begin(), study.cells.end(),
                                        [](const CellMeasurement& c) { return !c.request_e2el_ms.empty(); });
  const bool any_machine =
      std::any_of(study.cells.begin(), study.cells.end(), [](const CellMeasurement& c) { return !c.machine.empty(); });
  if (!any_requests && !any_machine) return;
  r.heading("Measurement quality: how sure the numbers are");
  if (any_requests) {
    r.paragraph(fmt::format(
        "Intervals: 95 % percentile bootstrap over requests ({} resamples, seed {}; ITL resamples whole requests); "
        "output throughput: a Student t interval over repeated runs when a cell has three or more, else the request "
        "bootstrap of output tokens / latency scaled to the measured throughput. A winner is named only when the "
        "two best differ by more than the tie tolerance and their intervals do not overlap; otherwise the level is "
        "a tie or not separable at this sample size, and no crossover rests on it.",
        analysis.bootstrap.resamples, analysis.bootstrap.seed));
    r.table(pivot<CellMeasurement>(
        "runs x requests", labels_of(study), concurrencies_of(study), study.cells,
        [](const CellMeasurement& c) -> std::optional<std::string> {
          return fmt::format("{} x {}", c.num_runs, c.request_e2el_ms.size() / std::max(c.num_runs, 1));
        },
        [](const CellMeasurement& c) { return c.precision; }, [](const CellMeasurement& c) { return c.concurrency; }));
  }
  if (any_machine) {
    std::vector<std::string> marked;
    for (const CellMeasurement& c : study.cells) {
      if (c.interfered)
        marked.push_back(fmt::format("{} at {:g}: {}", c.precision, c.concurrency, c.interference_reason));
    }
    if (marked.empty()) {
      r.paragraph("Busy-machine guard: no cell was measured under interference.");
    } else {
      r.paragraph(fmt::format(
          "Busy-machine guard: {} of {} cells were measured while other work used the machine (marked * in the "
          "tables, and named next to every conclusion resting on them):",
          marked.size(), study.cells.size()));
      r.bullets(marked);
    }
  }
}

// Per label: the most load within the SLO, the goodput there and where it first missed; then
// goodput per level and where the most goodput changes hands.
void add_slo_capacity(ReportBuilder& r, const StudyResults& study, const StudyAnalysis& analysis) {
  const SloAnalysis& slo = analysis.slo;
  if (slo.capacity.empty()) return;
  r.heading("Capacity under the SLO: how much load each precision carries within it");
  r.paragraph(fmt::format(
      "SLO: {}{}. A level meets it when that percentile of its requests does; capacity is the highest measured "
      "concurrency up to which every level met it (the true limit lies below the first level that missed). "
      "Goodput: requests per second that met every limit (vLLM's --goodput), from the per-request records.",
      describe_slo(slo.slo),
      slo.slo.is_default ? " (the default: the seed study's \"TTFT < 1 s\"; --slo sets another)" : ""));
  TextTable t;
  t.header = {"precision", "capacity (concurrency)", "goodput there (req/s)", "first level missing it", "there"};
  t.right_align = {false, true, true, true, true};
  for (const SloCapacity& c : slo.capacity) {
    t.rows.push_back({c.label, c.max_concurrency ? fmt::format("{:g}", *c.max_concurrency) : "none measured",
                      c.goodput_req_s ? number(*c.goodput_req_s, 3) : "-",
                      c.first_failing ? fmt::format("{:g}", *c.first_failing) : "none",
                      c.failing_value_ms ? fmt::format("{} {:.1f} ms", c.failing_metric, *c.failing_value_ms) : "-"});
  }
  r.table(t);
  r.table(metric_pivot(study, "goodput within the SLO (req/s)", Metric::kGoodput));
  for (const HeadlineMetric& m : analysis.headline) {
    if (m.metric == Metric::kGoodput)
      r.paragraph("Most goodput, across weight precisions: " + summarize_headline(m) + ".");
  }
}

std::vector<std::string> findings(const StudyAnalysis& analysis) {
  std::vector<std::string> out;
  for (const MetricAnalysis& m : analysis.metrics) {
    std::string line = std::string(metric_name(m.metric)) + ": ";
    std::vector<std::string> parts;
    for (const LevelWinner& w : m.winners) parts.push_back(describe_level(w, m.metric));
    for (size_t i = 0; i < parts.size(); ++i) line += (i ? ", " : "") + parts[i];
    for (const Crossover& c : m.crossovers) {
      line += fmt::format("; crossover {} -> {} between {:g} and {:g}", c.winner_below, c.winner_above,
                          c.concurrency_below, c.concurrency_above);
    }
    if (!m.next_probes.empty()) {
      line += "; measure next at";
      for (double p : m.next_probes) line += fmt::format(" {:g}", p);
    }
    out.push_back(line);
  }
  return out;
}

}  // namespace

ReportFiles render_study_report(const StudyResults& original, const StudyAnalysis& analysis,
                                const ReportExtras& extras) {
  // Repeated runs merged, with intervals and interference verdicts: what the tables show.
  StudyResults merged = original;
  if (!analysis.cells.empty()) merged.cells = analysis.cells;
  const StudyResults& study = merged;
  ReportFiles files;
  ReportBuilder r;
  const std::string title = study.title.empty() ? "crosspoint study report" : study.title;
  const HardwareCeilings& hw = analysis.hardware;
  const std::vector<double> levels = concurrencies_of(study);
  const std::string meta = fmt::format(
      "{} on {}: {:.0f} GB/s, {}; {} cells, {} ways of serving, concurrency {:g}–{:g}. Source and method below.",
      study.model_name.empty() ? "model" : study.model_name, hw.name, hw.bandwidth_gb_s, describe_fp16_rate(hw),
      study.cells.size(), labels_of(study).size(), levels.empty() ? 0.0 : levels.front(),
      levels.empty() ? 0.0 : levels.back());
  FirstScreen first = render_first_screen(title, meta, build_verdict(analysis, extras.quality), study, analysis);
  r.raw(first.markdown, first.html);
  for (auto& figure : first.figures) files.figures.push_back(std::move(figure));

  r.heading("Who wins each metric at each level, by how much, how sure");
  r.paragraph(
      "Every label against every other (the first screen compares weight precisions, each served its best way). "
      "Values with 95 % intervals; a level is a tie within the tolerance or not separable when the intervals "
      "overlap.");
  std::vector<std::string> items = findings(analysis);
  if (!analysis.low_load_leader.empty()) {
    std::optional<double> median_lost, tail_lost;
    for (const auto& [metric, at] : analysis.lead_lost_at) {
      if (metric == Metric::kMedianTpot) median_lost = at;
      if ((metric == Metric::kP99Itl || metric == Metric::kP99Tpot) && at && (!tail_lost || *at < *tail_lost))
        tail_lost = at;
    }
    if (tail_lost && (!median_lost || *tail_lost < *median_lost)) {
      items.push_back(
          fmt::format("the tail crosses first: {} loses its p99 lead at concurrency {:g}, its median TPOT "
                      "lead only at {}",
                      analysis.low_load_leader, *tail_lost,
                      median_lost ? fmt::format("{:g}", *median_lost) : std::string("no measured level")));
    }
  }
  r.bullets(items);
  add_slo_capacity(r, study, analysis);

  r.heading("Latency: which precision answers fastest at each concurrency");
  const bool any_interval = std::any_of(study.cells.begin(), study.cells.end(),
                                        [](const CellMeasurement& c) { return c.median_tpot_ci.has_value(); });
  if (any_interval) {
    r.paragraph(
        "Each value is the cell's estimate with its 95 % bootstrap interval over requests in brackets; * marks a "
        "cell measured under interference (busy-machine guard).");
  }
  r.table(metric_pivot(study, "median TPOT (ms)", Metric::kMedianTpot));
  r.table(metric_pivot(study, "p99 TPOT (ms)", Metric::kP99Tpot));
  r.table(metric_pivot(study, "median ITL (ms)", Metric::kMedianItl));
  r.table(metric_pivot(study, "p99 ITL (ms)", Metric::kP99Itl));
  r.table(metric_pivot(study, "median TTFT (ms)", Metric::kMedianTtft));
  r.table(metric_pivot(study, "p99 TTFT (ms)", Metric::kP99Ttft));
  if (std::any_of(study.cells.begin(), study.cells.end(),
                  [](const CellMeasurement& c) { return c.median_e2el_ms.has_value(); })) {
    r.table(metric_pivot(study, "median E2E latency (ms)", Metric::kMedianE2el));
    r.table(metric_pivot(study, "p99 E2E latency (ms)", Metric::kP99E2el));
  }
  LinePlot median_vs_p99 = metric_plot(study, "Median (solid) vs p99 (dashed) TPOT", "ms",
                                       {{Metric::kMedianTpot, false}, {Metric::kP99Tpot, true}});
  median_vs_p99.log_y = true;
  r.figures({{"tpot.svg", render_line_plot(metric_plot(study, "Median TPOT", "ms", {{Metric::kMedianTpot, false}}))},
             {"tpot_median_p99.svg", render_line_plot(median_vs_p99)}},
            &files);

  r.heading("Throughput and batch: how many tokens per second, at what batch");
  r.table(metric_pivot(study, "output tok/s", Metric::kOutputThroughput));
  auto ranks_of = [&study](const std::string& label) {
    const PrecisionSetup* setup = study.find_precision(label);
    return setup != nullptr ? setup->tensor_parallel_size : 1;
  };
  const std::vector<std::string> labels = labels_of(study);
  if (std::any_of(labels.begin(), labels.end(), [&](const std::string& l) { return ranks_of(l) > 1; })) {
    r.table(measurement_pivot(
        study, "output tok/s per device",
        [&](const CellMeasurement& c) -> std::optional<double> {
          if (!c.output_throughput_tok_s) return std::nullopt;
          return *c.output_throughput_tok_s / ranks_of(c.precision);
        },
        1));
    r.paragraph(
        "A label ending in -tpN split the model over N ranks (N GPUs on a GPU server, N groups of threads on the "
        "CPU): per device divides its server's throughput by N, the figure to compare when devices are what is "
        "bought.");
  }
  r.table(
      measurement_pivot(study, "mean running batch", [](const CellMeasurement& c) { return c.mean_running_batch; }, 1));
  const bool any_steady = std::any_of(study.cells.begin(), study.cells.end(),
                                      [](const CellMeasurement& c) { return c.steady_running_batch.has_value(); });
  if (any_steady) {
    r.table(measurement_pivot(
        study, "running batch, steady state", [](const CellMeasurement& c) { return c.steady_running_batch; }, 1));
    r.paragraph(
        "Steady state: from the moment the client first held all its slots until the first completion after its "
        "last dispatch; the whole-run mean above includes the ramp and the drain of the longest outputs.");
  }
  GroupedBarChart bars;
  bars.title = "Output throughput (tok/s)";
  bars.y_label = "tok/s";
  bars.series_names = labels_of(study);
  for (double c : concurrencies_of(study)) {
    BarGroup group{conc_label(c), {}};
    for (const std::string& label : bars.series_names) {
      double v = -1;
      for (const CellMeasurement& cell : study.cells) {
        if (cell.precision == label && cell.concurrency == c && cell.output_throughput_tok_s)
          v = *cell.output_throughput_tok_s;
      }
      group.values.push_back(v);
    }
    bars.groups.push_back(group);
  }
  LinePlot batch_plot = metric_plot(study, "Mean running batch", "sequences per step", {});
  for (const std::string& label : labels_of(study)) {
    PlotSeries s{label, {}, false, -1, {}};
    for (const CellMeasurement& cell : study.cells) {
      if (cell.precision == label && cell.mean_running_batch && cell.concurrency > 0)
        s.points.emplace_back(cell.concurrency, *cell.mean_running_batch);
    }
    if (!s.points.empty()) batch_plot.series.push_back(s);
  }
  r.figures({{"throughput.svg", render_grouped_bars(bars)}, {"batch.svg", render_line_plot(batch_plot)}}, &files);

  r.heading("Roofline: how close each cell came to the hardware's limits");
  r.bullets(analysis.cost_descriptions);
  TextTable roof;
  roof.header = {"precision", "conc",     "batch B",     "GB/step", "GFLOP/token",  "FLOP/byte",
                 "critical",  "bound ms", "measured ms", "BW util", "compute util", "overhead ms"};
  roof.right_align = {false, true, true, true, true, true, true, true, true, true, true, true};
  for (const RooflineCell& c : analysis.roofline) {
    roof.rows.push_back({c.precision, fmt::format("{:g}", c.concurrency),
                         number(c.batch, 1) + (c.batch_measured ? "" : "*") + (c.batch_raised_to_one ? " ↑" : ""),
                         number(c.bytes_per_step / 1e9, 2), number(c.flops_per_token / 1e9, 2),
                         number(c.arithmetic_intensity, 1), number(c.critical_intensity, 0), number(c.bound_tpot_ms, 1),
                         c.measured_tpot_ms > 0 ? number(c.measured_tpot_ms, 2) : "-",
                         c.measured_tpot_ms > 0 ? number(c.bandwidth_utilisation * 100, 1) + " %" : "-",
                         c.compute_utilisation > 0 ? number(c.compute_utilisation * 100, 2) + " %" : "-",
                         c.measured_tpot_ms > 0 ? number(c.overhead_ms, 1) : "-"});
  }
  r.table(roof);
  double all_reduce_mb = 0;
  for (const RooflineCell& c : analysis.roofline)
    all_reduce_mb = std::max(all_reduce_mb, c.all_reduce_bytes_per_step / 1e6);
  if (all_reduce_mb > 0) {
    r.paragraph(fmt::format(
        "A split (-tpN) is one rank's roofline: its share of the weights, KV cache and FLOPs on one device, the "
        "ranks running side by side. Its collectives (all-reduces after o_proj and down_proj in every layer, the "
        "logits gather) move up to {} MB "
        "a step per rank over the interconnect, outside the bound: no interconnect ceiling is measured.",
        number(all_reduce_mb, 2)));
  }
  r.paragraph(
      "Bound = the larger of bytes/bandwidth and FLOPs/peak for one decode step; BW util = memory bound / "
      "measured median TPOT; overhead = measured - bound (dequantisation, kernel launches, scheduling). "
      "B = the mean batch of the decode steps (the server's samples while a request ran); * = assumed equal to the "
      "concurrency (no server samples); ↑ = the whole-run mean (which counts idle gaps) raised to 1, as requests "
      "ran. GB/step counts the KV cache's reads at the "
      "running sequences' mean context where it is known (estimated as the KV cache's mean usage x its capacity / "
      "the mean batch when the bench did not record it).");
  r.table(
      roofline_pivot(study, analysis, "bandwidth utilisation", [](const RooflineCell& c) -> std::optional<std::string> {
        if (c.measured_tpot_ms <= 0) return std::nullopt;
        return number(c.bandwidth_utilisation * 100, 1) + " %";
      }));
  r.table(roofline_pivot(
      study, analysis, "arithmetic intensity (FLOP/byte)",
      [](const RooflineCell& c) -> std::optional<std::string> { return number(c.arithmetic_intensity, 1); }));
  RooflinePlot roofline_plot;
  roofline_plot.title = "Roofline: every cell (" + hw.name + ")";
  roofline_plot.bandwidth_gb_s = hw.bandwidth_gb_s;
  if (hw.fp16_tflops > 0)
    roofline_plot.ceilings.push_back({fmt::format("fp16 {:g} TFLOP/s", hw.fp16_tflops), hw.fp16_tflops});
  if (hw.fp8_tflops > 0)
    roofline_plot.ceilings.push_back({fmt::format("fp8 {:g} TFLOP/s", hw.fp8_tflops), hw.fp8_tflops});
  if (hw.fp16_tflops <= 0 && hw.fp32_tflops > 0)
    roofline_plot.ceilings.push_back({fmt::format("fp32 {:g} TFLOP/s", hw.fp32_tflops), hw.fp32_tflops});
  for (const RooflineCell& c : analysis.roofline) {
    roofline_plot.points.push_back(
        {c.precision, fmt::format("c={:g}", c.concurrency), c.arithmetic_intensity, c.achieved_tflops});
  }
  roofline_plot.width = 900;
  roofline_plot.height = 480;
  r.figures({{"roofline.svg", render_roofline_plot(roofline_plot)}}, &files);

  const std::vector<CrossoverExplanation> explanations = explain_crossovers(analysis);
  if (!explanations.empty()) {
    r.heading("Why the crossovers happen");
    r.paragraph(
        "Each crossover read off the roofline of the cells on both sides of it: bytes per step, arithmetic intensity "
        "against the precision's critical intensity, attention's share of the bytes, the batch, and whether the KV "
        "cache bound it.");
    for (const CrossoverExplanation& e : explanations) {
      r.paragraph(e.where + ".");
      r.bullets(e.reasons);
    }
  }

  if (!analysis.capacity.empty()) {
    r.heading("Capacity: how many requests fit in the KV cache");
    if (!study.memory_budget.empty())
      r.paragraph("Every server held to a memory budget of " + study.memory_budget +
                  " for weights, activations and the KV cache (serve --memory-budget): the KV tokens are what the "
                  "budget leaves each precision, not what the device has.");
    if (study.max_num_seqs > 0)
      r.paragraph(
          fmt::format("The servers ran with --max-num-seqs {:g}: up to that many sequences per step, so "
                      "below it a batch is bounded by the client's concurrency or by the KV cache.",
                      study.max_num_seqs));
    TextTable cap;
    cap.header = {"precision", "KV tokens", "worst case (÷ max-model-len)", "workload (÷ mean tokens/request)",
                  "verdict"};
    cap.right_align = {false, true, true, true, false};
    for (const PrecisionCapacity& p : analysis.capacity) {
      const PrecisionSetup* setup = study.find_precision(p.precision);
      cap.rows.push_back({p.precision, setup ? fmt::format("{:.0f}", setup->kv_cache_tokens) : "-",
                          number(p.plan.worst_case_concurrency, 2), number(p.plan.workload_concurrency, 1),
                          p.plan.verdict});
    }
    r.table(cap);
  }

  add_measurement_quality(r, study, analysis);
  r.heading("Source");
  r.paragraph(fmt::format("{}. Ceilings: {} ({}); critical intensity {:.0f} FLOP/byte at that rate.",
                          study.source.empty() ? "-" : study.source, hw.name,
                          hw.source.empty() ? "no source given" : hw.source,
                          critical_intensity(hw.fp16_tflops > 0 ? hw.fp16_tflops : hw.fp32_tflops, hw.bandwidth_gb_s)));
  files.markdown = r.md();
  files.html = render_html_page(title, r.html());
  return files;
}

Status write_report(const std::string& dir, const ReportFiles& files) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) return io_error(dir + ": cannot create directory: " + error.message());
  auto write = [&](const std::string& name, const std::string& text) -> Status {
    const std::string path = (std::filesystem::path(dir) / name).string();
    std::ofstream out(path, std::ios::binary);
    out << text;
    if (!out) return io_error(path + ": cannot write");
    return Status::ok();
  };
  CROSSPOINT_RETURN_IF_ERROR(write("report.md", files.markdown));
  CROSSPOINT_RETURN_IF_ERROR(write("report.html", files.html));
  for (const auto& [name, svg] : files.figures) CROSSPOINT_RETURN_IF_ERROR(write(name, svg));
  return Status::ok();
}

}  // namespace crosspoint::analysis
