#include "analysis/first_screen.h"

#include <fmt/format.h>

#include <algorithm>

#include "analysis/markdown_table.h"

namespace crosspoint::analysis {

namespace {

std::vector<std::string> labels_in_order(const StudyResults& study) {
  std::vector<std::string> labels;
  for (const CellMeasurement& cell : study.cells) {
    if (std::find(labels.begin(), labels.end(), cell.precision) == labels.end()) labels.push_back(cell.precision);
  }
  return labels;
}

// A label's cells with a positive concurrency, lowest first.
std::vector<const CellMeasurement*> cells_of(const StudyResults& study, const std::string& label) {
  std::vector<const CellMeasurement*> cells;
  for (const CellMeasurement& cell : study.cells) {
    if (cell.precision == label && cell.concurrency > 0) cells.push_back(&cell);
  }
  std::sort(cells.begin(), cells.end(),
            [](const CellMeasurement* a, const CellMeasurement* b) { return a->concurrency < b->concurrency; });
  return cells;
}

}  // namespace

LinePlot median_tpot_band_plot(const StudyResults& study, const StudyAnalysis& analysis) {
  LinePlot plot;
  plot.title = "Median TPOT by concurrency (bands: 95 % intervals)";
  plot.x_label = "concurrency (log scale)";
  plot.y_label = "median TPOT (ms)";
  plot.width = 540;
  plot.height = 340;
  const std::vector<std::string> labels = labels_in_order(study);
  for (size_t i = 0; i < labels.size(); ++i) {
    PlotSeries s;
    s.name = labels[i];
    s.colour_index = static_cast<int>(i);
    s.band = true;
    for (const CellMeasurement* cell : cells_of(study, labels[i])) {
      if (!cell->median_tpot_ms) continue;
      s.points.emplace_back(cell->concurrency, *cell->median_tpot_ms);
      if (cell->median_tpot_ci)
        s.error_bars.emplace_back(cell->concurrency, cell->median_tpot_ci->lower, cell->median_tpot_ci->upper);
    }
    if (!s.points.empty()) plot.series.push_back(std::move(s));
  }
  const bool any_interval =
      std::any_of(plot.series.begin(), plot.series.end(), [](const PlotSeries& s) { return !s.error_bars.empty(); });
  if (!any_interval) plot.title = "Median TPOT by concurrency (no per-request data: no intervals)";
  for (const HeadlineMetric& m : analysis.headline) {
    if (m.metric != Metric::kMedianTpot) continue;
    for (const Crossover& c : m.crossovers) {
      plot.spans.push_back(
          {c.concurrency_below, c.concurrency_above, fmt::format("{} → {}", c.winner_below, c.winner_above)});
    }
  }
  return plot;
}

LinePlot pareto_plot(const StudyResults& study) {
  LinePlot plot;
  plot.title = "Throughput vs median TPOT (labels: concurrency)";
  plot.x_label = "median TPOT (ms, log scale)";
  plot.y_label = "output tok/s (log scale)";
  plot.log_x = true;
  plot.log_y = true;
  plot.connect_in_order = true;
  plot.width = 540;
  plot.height = 340;
  const std::vector<std::string> labels = labels_in_order(study);
  for (size_t i = 0; i < labels.size(); ++i) {
    PlotSeries s;
    s.name = labels[i];
    s.colour_index = static_cast<int>(i);
    for (const CellMeasurement* cell : cells_of(study, labels[i])) {
      if (!cell->median_tpot_ms || !cell->output_throughput_tok_s) continue;
      s.points.emplace_back(*cell->median_tpot_ms, *cell->output_throughput_tok_s);
      s.point_labels.push_back(fmt::format("{:g}", cell->concurrency));
    }
    if (!s.points.empty()) plot.series.push_back(std::move(s));
  }
  return plot;
}

std::string describe_fp16_rate(const HardwareCeilings& hw) {
  const bool measured = hw.source.rfind("measured", 0) == 0;
  const bool datasheet = hw.source.rfind("datasheet", 0) == 0;
  const std::string origin = measured ? "measured" : datasheet ? "datasheet" : "as given";
  if (hw.fp16_tflops > 0) return fmt::format("{:.3g} TFLOP/s fp16 ({})", hw.fp16_tflops, origin);
  if (hw.fp32_tflops > 0) return fmt::format("{:.3g} TFLOP/s fp32 ({}; no fp16 rate)", hw.fp32_tflops, origin);
  return "no matmul rate known";
}

FirstScreen render_first_screen(const std::string& title, const std::string& meta,
                                const std::vector<VerdictLine>& verdict, const StudyResults& study,
                                const StudyAnalysis& analysis) {
  FirstScreen out;
  out.markdown = "# " + title + "\n\n" + meta + "\n\n";
  out.html = "<header id=\"first-screen\">\n<h1>" + xml_escape(title) + "</h1>\n<p class=\"meta\">" + xml_escape(meta) +
             "</p>\n<dl class=\"verdict\" id=\"verdict\">\n";
  for (const VerdictLine& line : verdict) {
    out.markdown += "- **" + line.question + ":** " + line.answer + "\n";
    out.html += "<dt>" + xml_escape(line.question) + "</dt><dd>" + xml_escape(line.answer) + "</dd>\n";
  }
  out.markdown += "\n";
  out.html += "</dl>\n<div class=\"figures\" id=\"first-figures\">\n";
  out.figures = {{"first_tpot.svg", render_line_plot(median_tpot_band_plot(study, analysis))},
                 {"first_pareto.svg", render_line_plot(pareto_plot(study))}};
  for (const auto& [name, svg] : out.figures) {
    out.markdown += "![" + name + "](" + name + ")\n";
    out.html += svg;
  }
  out.markdown += "\n";
  out.html += "</div>\n</header>\n";
  return out;
}

}  // namespace crosspoint::analysis
