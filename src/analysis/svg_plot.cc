#include "analysis/svg_plot.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "analysis/markdown_table.h"

namespace crosspoint::analysis {

namespace {

constexpr const char* kPalette[] = {"#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9", "#000000"};

double axis_value(double v, bool log) { return log ? std::log10(v) : v; }

// Ticks inside [lo, hi]: powers of ten (with 2 and 5 when the range spans little) on a log
// axis; 1/2/5 steps aiming at ~5 ticks on a linear one.
std::vector<double> make_ticks(double lo, double hi, bool log) {
  std::vector<double> ticks;
  if (log) {
    const int first = static_cast<int>(std::floor(std::log10(lo)));
    const int last = static_cast<int>(std::ceil(std::log10(hi)));
    const bool dense = last - first <= 2;
    for (int e = first; e <= last; ++e) {
      for (double m : {1.0, 2.0, 5.0}) {
        if (m != 1.0 && !dense) continue;
        const double t = m * std::pow(10.0, e);
        if (t >= lo * 0.999 && t <= hi * 1.001) ticks.push_back(t);
      }
    }
    return ticks;
  }
  const double span = hi - lo;
  if (span <= 0) return {lo};
  const double raw = span / 5;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double step = magnitude;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * magnitude >= raw) {
      step = m * magnitude;
      break;
    }
  }
  for (double t = std::ceil(lo / step) * step; t <= hi + step * 1e-9; t += step)
    ticks.push_back(std::abs(t) < step * 1e-9 ? 0 : t);
  return ticks;
}

std::string tick_label(double v) {
  if (v == 0) return "0";
  const double a = std::abs(v);
  if (a >= 1e7 || a < 1e-2) return fmt::format("{:.0e}", v);
  if (a >= 10 || std::abs(v - std::round(v)) < 1e-9) return fmt::format("{:.0f}", v);
  return fmt::format("{:g}", v);
}

std::string svg_open(double width, double height, const std::string& title) {
  return fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0:.0f}\" height=\"{1:.0f}\" viewBox=\"0 0 {0:.0f} {1:.0f}\" "
      "font-family=\"Helvetica, Arial, sans-serif\" font-size=\"12\">\n"
      "<title>{2}</title>\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"{3:.1f}\" y=\"22\" text-anchor=\"middle\" font-size=\"15\" font-weight=\"bold\">{2}</text>\n",
      width, height, xml_escape(title), width / 2);
}

// Axes, grid, ticks and labels of a frame.
std::string draw_axes(const PlotFrame& f, const std::string& x_label, const std::string& y_label,
                      bool draw_x_ticks = true) {
  std::string out;
  const double x0 = f.left, x1 = f.width - f.right, y0 = f.height - f.bottom, y1 = f.top;
  if (draw_x_ticks) {
    for (double t : make_ticks(f.x_min, f.x_max, f.log_x)) {
      const double x = f.map_x(t);
      out += fmt::format("<line x1=\"{0:.2f}\" y1=\"{1:.2f}\" x2=\"{0:.2f}\" y2=\"{2:.2f}\" stroke=\"#e5e5e5\"/>\n", x,
                         y0, y1);
      out +=
          fmt::format("<text x=\"{:.2f}\" y=\"{:.2f}\" text-anchor=\"middle\">{}</text>\n", x, y0 + 16, tick_label(t));
    }
  }
  for (double t : make_ticks(f.y_min, f.y_max, f.log_y)) {
    const double y = f.map_y(t);
    out += fmt::format("<line x1=\"{0:.2f}\" y1=\"{1:.2f}\" x2=\"{2:.2f}\" y2=\"{1:.2f}\" stroke=\"#e5e5e5\"/>\n", x0,
                       y, x1);
    out += fmt::format("<text x=\"{:.2f}\" y=\"{:.2f}\" text-anchor=\"end\">{}</text>\n", x0 - 6, y + 4, tick_label(t));
  }
  out += fmt::format(
      "<rect x=\"{:.2f}\" y=\"{:.2f}\" width=\"{:.2f}\" height=\"{:.2f}\" fill=\"none\" stroke=\"#333\"/>\n", x0, y1,
      x1 - x0, y0 - y1);
  out += fmt::format("<text x=\"{:.2f}\" y=\"{:.2f}\" text-anchor=\"middle\">{}</text>\n", (x0 + x1) / 2, f.height - 12,
                     xml_escape(x_label));
  out += fmt::format("<text transform=\"translate(16 {:.2f}) rotate(-90)\" text-anchor=\"middle\">{}</text>\n",
                     (y0 + y1) / 2, xml_escape(y_label));
  return out;
}

std::string draw_legend(const std::vector<std::string>& names, const PlotFrame& f, const std::vector<bool>& dashed = {},
                        const std::vector<size_t>& colours = {}) {
  std::string out;
  double y = f.top + 14;
  for (size_t i = 0; i < names.size(); ++i) {
    const double x = f.left + 10;
    const bool dash = i < dashed.size() && dashed[i];
    out += fmt::format(
        "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"{}\" stroke-width=\"2.5\"{}/>\n", x,
        y - 4, x + 22, y - 4, series_colour(i < colours.size() ? colours[i] : i),
        dash ? " stroke-dasharray=\"5 3\"" : "");
    out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\">{}</text>\n", x + 28, y, xml_escape(names[i]));
    y += 17;
  }
  return out;
}

// Data range padded a little (multiplicatively on a log axis) so points are not on the frame.
void fit_range(std::vector<double> values, bool log, double* lo, double* hi, bool include_zero) {
  values.erase(
      std::remove_if(values.begin(), values.end(), [log](double v) { return !std::isfinite(v) || (log && v <= 0); }),
      values.end());
  if (values.empty()) {
    *lo = log ? 1 : 0;
    *hi = log ? 10 : 1;
    return;
  }
  *lo = *std::min_element(values.begin(), values.end());
  *hi = *std::max_element(values.begin(), values.end());
  if (log) {
    *lo /= 1.5;
    *hi *= 1.5;
  } else {
    if (include_zero) *lo = std::min(*lo, 0.0);
    const double pad = (*hi - *lo) * 0.08 + (*hi == *lo ? 1 : 0);
    *hi += pad;
    if (!include_zero) *lo -= pad;
  }
}

// The intervals of a series as one closed translucent polygon: uppers left to right, lowers back.
std::string draw_band(const PlotSeries& s, const PlotFrame& f, const char* colour) {
  std::vector<std::tuple<double, double, double>> bars;
  for (const auto& [x, lo, hi] : s.error_bars) {
    if (std::isfinite(lo) && std::isfinite(hi) && !(f.log_x && x <= 0) && !(f.log_y && lo <= 0))
      bars.emplace_back(x, lo, hi);
  }
  if (bars.empty()) return "";
  std::sort(bars.begin(), bars.end());
  std::string points;
  if (bars.size() == 1) {  // one level: a narrow box keeps the interval visible
    const auto& [x, lo, hi] = bars.front();
    points = fmt::format("{0:.2f},{1:.2f} {2:.2f},{1:.2f} {2:.2f},{3:.2f} {0:.2f},{3:.2f}", f.map_x(x) - 4, f.map_y(hi),
                         f.map_x(x) + 4, f.map_y(lo));
  } else {
    for (const auto& [x, lo, hi] : bars) points += fmt::format("{:.2f},{:.2f} ", f.map_x(x), f.map_y(hi));
    for (auto it = bars.rbegin(); it != bars.rend(); ++it)
      points += fmt::format("{:.2f},{:.2f} ", f.map_x(std::get<0>(*it)), f.map_y(std::get<1>(*it)));
    points.pop_back();
  }
  return fmt::format(
      "<polygon class=\"band\" data-series=\"{}\" data-levels=\"{}\" points=\"{}\" fill=\"{}\" fill-opacity=\"0.18\" "
      "stroke=\"none\"/>\n",
      xml_escape(s.name), bars.size(), points, colour);
}

// A shaded x range from x_lower to x_upper, its label at the bottom.
std::string draw_span(const PlotSpan& span, const PlotFrame& f) {
  const double x0 = std::max(f.left, f.map_x(span.x_lower));
  const double x1 = std::min(f.width - f.right, f.map_x(span.x_upper));
  if (!(x1 > x0)) return "";
  const double top = f.top, bottom = f.height - f.bottom;
  return fmt::format(
      "<g class=\"x-span\" data-lower=\"{:g}\" data-upper=\"{:g}\"><rect x=\"{:.2f}\" y=\"{:.2f}\" width=\"{:.2f}\" "
      "height=\"{:.2f}\" fill=\"#888\" fill-opacity=\"0.12\" stroke=\"#888\" stroke-dasharray=\"4 3\"/>"
      "<text x=\"{:.2f}\" y=\"{:.2f}\" text-anchor=\"middle\" font-size=\"11\" fill=\"#333\">{}</text></g>\n",
      span.x_lower, span.x_upper, x0, top, x1 - x0, bottom - top, (x0 + x1) / 2, bottom - 6, xml_escape(span.label));
}

}  // namespace

const char* series_colour(size_t index) { return kPalette[index % (sizeof kPalette / sizeof kPalette[0])]; }

double PlotFrame::map_x(double x) const {
  const double a = axis_value(x_min, log_x), b = axis_value(x_max, log_x);
  return left + (axis_value(x, log_x) - a) / (b - a) * (width - left - right);
}

double PlotFrame::map_y(double y) const {
  const double a = axis_value(y_min, log_y), b = axis_value(y_max, log_y);
  return height - bottom - (axis_value(y, log_y) - a) / (b - a) * (height - top - bottom);
}

PlotFrame line_plot_frame(const LinePlot& plot) {
  PlotFrame f;
  f.width = plot.width;
  f.height = plot.height;
  f.log_x = plot.log_x;
  f.log_y = plot.log_y;
  std::vector<double> xs, ys;
  for (const PlotSeries& s : plot.series) {
    for (const auto& [x, y] : s.points) {
      xs.push_back(x);
      ys.push_back(y);
    }
    for (const auto& [x, lo, hi] : s.error_bars) {
      ys.push_back(lo);
      ys.push_back(hi);
    }
  }
  fit_range(xs, plot.log_x, &f.x_min, &f.x_max, false);
  fit_range(ys, plot.log_y, &f.y_min, &f.y_max, true);
  return f;
}

std::string render_line_plot(const LinePlot& plot) {
  const PlotFrame f = line_plot_frame(plot);
  std::string out = svg_open(plot.width, plot.height, plot.title) + draw_axes(f, plot.x_label, plot.y_label);
  for (const PlotSpan& span : plot.spans) out += draw_span(span, f);
  std::vector<std::string> names;
  std::vector<bool> dashed;
  std::vector<size_t> colours;
  for (size_t i = 0; i < plot.series.size(); ++i) {
    const PlotSeries& s = plot.series[i];
    const size_t colour = s.colour_index >= 0 ? static_cast<size_t>(s.colour_index) : i;
    names.push_back(s.name);
    dashed.push_back(s.dashed);
    colours.push_back(colour);
    auto points = s.points;
    if (!plot.connect_in_order) std::sort(points.begin(), points.end());
    std::string path;
    for (const auto& [x, y] : points) {
      if (!std::isfinite(y) || (plot.log_x && x <= 0) || (plot.log_y && y <= 0)) continue;
      path += fmt::format("{}{:.2f},{:.2f}", path.empty() ? "" : " ", f.map_x(x), f.map_y(y));
    }
    if (!path.empty()) {
      out += fmt::format("<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2.5\"{}/>\n", path,
                         series_colour(colour), s.dashed ? " stroke-dasharray=\"5 3\"" : "");
    }
    if (s.band) out += draw_band(s, f, series_colour(colour));
    for (const auto& [x, lo, hi] : s.error_bars) {
      if (s.band) break;
      if (!std::isfinite(lo) || !std::isfinite(hi) || (plot.log_x && x <= 0) || (plot.log_y && lo <= 0)) continue;
      const double px = f.map_x(x), top = f.map_y(hi), bottom = f.map_y(lo);
      out += fmt::format(
          "<g class=\"error-bar\" data-series=\"{}\" data-x=\"{:g}\" data-lower=\"{:g}\" data-upper=\"{:g}\" "
          "stroke=\"{}\" stroke-width=\"1.5\"><line x1=\"{:.2f}\" y1=\"{:.2f}\" x2=\"{:.2f}\" y2=\"{:.2f}\"/>"
          "<line x1=\"{:.2f}\" y1=\"{:.2f}\" x2=\"{:.2f}\" y2=\"{:.2f}\"/><line x1=\"{:.2f}\" y1=\"{:.2f}\" "
          "x2=\"{:.2f}\" y2=\"{:.2f}\"/></g>\n",
          xml_escape(s.name), x, lo, hi, series_colour(colour), px, top, px, bottom, px - 4, top, px + 4, top, px - 4,
          bottom, px + 4, bottom);
    }
    for (size_t p = 0; p < s.points.size() && p < s.point_labels.size(); ++p) {
      const auto& [x, y] = s.points[p];
      if (!std::isfinite(y) || (plot.log_x && x <= 0) || (plot.log_y && y <= 0)) continue;
      out += fmt::format(
          "<text class=\"point-label\" x=\"{:.2f}\" y=\"{:.2f}\" font-size=\"10\" fill=\"#333\">{}</text>\n",
          f.map_x(x) + 6, f.map_y(y) - 6, xml_escape(s.point_labels[p]));
    }
    for (const auto& [x, y] : points) {
      if (!std::isfinite(y) || (plot.log_x && x <= 0) || (plot.log_y && y <= 0)) continue;
      out += fmt::format(
          "<circle class=\"point\" data-series=\"{}\" data-x=\"{:g}\" data-y=\"{:g}\" cx=\"{:.2f}\" cy=\"{:.2f}\" "
          "r=\"4\" "
          "fill=\"{}\"><title>{}: {:g}, {:g}</title></circle>\n",
          xml_escape(s.name), x, y, f.map_x(x), f.map_y(y), series_colour(colour), xml_escape(s.name), x, y);
    }
  }
  out += draw_legend(names, f, dashed, colours);
  return out + "</svg>\n";
}

std::string render_grouped_bars(const GroupedBarChart& chart) {
  PlotFrame f;
  f.width = chart.width;
  f.height = chart.height;
  std::vector<double> values;
  for (const BarGroup& g : chart.groups) values.insert(values.end(), g.values.begin(), g.values.end());
  fit_range(values, false, &f.y_min, &f.y_max, true);
  f.x_min = 0;
  f.x_max = std::max<double>(1, static_cast<double>(chart.groups.size()));
  std::string out = svg_open(chart.width, chart.height, chart.title) + draw_axes(f, "", chart.y_label, false);
  const double group_px = (f.width - f.left - f.right) / f.x_max;
  const size_t num_series = std::max<size_t>(1, chart.series_names.size());
  const double bar_px = group_px * 0.8 / static_cast<double>(num_series);
  for (size_t g = 0; g < chart.groups.size(); ++g) {
    const BarGroup& group = chart.groups[g];
    const double group_left = f.left + group_px * static_cast<double>(g) + group_px * 0.1;
    for (size_t s = 0; s < group.values.size() && s < num_series; ++s) {
      const double v = group.values[s];
      if (!std::isfinite(v) || v < 0) continue;
      const double x = group_left + bar_px * static_cast<double>(s);
      const double y = f.map_y(v), base = f.map_y(0);
      const std::string series = s < chart.series_names.size() ? chart.series_names[s] : "";
      out += fmt::format(
          "<rect class=\"point\" data-series=\"{}\" data-x=\"{}\" data-y=\"{:g}\" x=\"{:.2f}\" y=\"{:.2f}\" "
          "width=\"{:.2f}\" "
          "height=\"{:.2f}\" fill=\"{}\"><title>{} {}: {:g}</title></rect>\n",
          xml_escape(series), xml_escape(group.label), v, x, y, bar_px * 0.92, base - y, series_colour(s),
          xml_escape(series), xml_escape(group.label), v);
    }
    out += fmt::format("<text x=\"{:.2f}\" y=\"{:.2f}\" text-anchor=\"middle\">{}</text>\n",
                       group_left + group_px * 0.4, f.height - f.bottom + 16, xml_escape(group.label));
  }
  out += draw_legend(chart.series_names, f);
  return out + "</svg>\n";
}

PlotFrame roofline_plot_frame(const RooflinePlot& plot) {
  PlotFrame f;
  f.width = plot.width;
  f.height = plot.height;
  f.log_x = f.log_y = true;
  double max_peak = 0;
  for (const RooflineCeiling& c : plot.ceilings) max_peak = std::max(max_peak, c.peak_tflops);
  const double bw_tb = plot.bandwidth_gb_s / 1e3;
  // x from below the smallest point to past the highest ridge; y from below the smallest
  // point to above the highest peak.
  double min_x = std::numeric_limits<double>::max(), min_y = std::numeric_limits<double>::max();
  for (const RooflinePoint& p : plot.points) {
    if (p.arithmetic_intensity > 0) min_x = std::min(min_x, p.arithmetic_intensity);
    if (p.achieved_tflops > 0) min_y = std::min(min_y, p.achieved_tflops);
  }
  const double ridge = bw_tb > 0 ? max_peak / bw_tb : 1;
  f.x_min =
      std::pow(10.0, std::floor(std::log10(std::min(min_x == std::numeric_limits<double>::max() ? 1 : min_x, 1.0))));
  f.x_max = std::pow(10.0, std::ceil(std::log10(std::max(ridge * 4, 10.0))));
  const double low_roof = bw_tb * f.x_min;
  f.y_min =
      std::pow(10.0, std::floor(std::log10(std::max(
                         1e-9, std::min(min_y == std::numeric_limits<double>::max() ? low_roof : min_y, low_roof)))));
  f.y_max = std::pow(10.0, std::ceil(std::log10(std::max(max_peak * 1.5, f.y_min * 10))));
  return f;
}

std::string render_roofline_plot(const RooflinePlot& plot) {
  const PlotFrame f = roofline_plot_frame(plot);
  std::string out =
      svg_open(plot.width, plot.height, plot.title) + draw_axes(f, "arithmetic intensity (FLOP/byte)", "TFLOP/s");
  const double bw_tb = plot.bandwidth_gb_s / 1e3;
  // One roof per ceiling: the bandwidth slope up to the ridge, then flat.
  for (size_t i = 0; i < plot.ceilings.size(); ++i) {
    const RooflineCeiling& c = plot.ceilings[i];
    if (c.peak_tflops <= 0 || bw_tb <= 0) continue;
    const double ridge = c.peak_tflops / bw_tb;
    const double x_start = f.x_min;
    out += fmt::format(
        "<polyline class=\"roof\" points=\"{:.2f},{:.2f} {:.2f},{:.2f} {:.2f},{:.2f}\" fill=\"none\" stroke=\"#444\" "
        "stroke-width=\"2\"{}/>\n",
        f.map_x(x_start), f.map_y(bw_tb * x_start), f.map_x(ridge), f.map_y(c.peak_tflops), f.map_x(f.x_max),
        f.map_y(c.peak_tflops), i == 0 ? "" : " stroke-dasharray=\"6 4\"");
    out += fmt::format(
        "<text x=\"{:.2f}\" y=\"{:.2f}\" text-anchor=\"end\" fill=\"#444\">{} (ridge {:.0f} FLOP/B)</text>\n",
        f.width - f.right - 4, f.map_y(c.peak_tflops) + (i == 0 && plot.ceilings.size() > 1 ? 15 : -5),
        xml_escape(c.name), ridge);
  }
  std::vector<std::string> series;
  for (const RooflinePoint& p : plot.points) {
    if (std::find(series.begin(), series.end(), p.series) == series.end()) series.push_back(p.series);
  }
  for (const RooflinePoint& p : plot.points) {
    if (p.arithmetic_intensity <= 0 || p.achieved_tflops <= 0) continue;
    const size_t colour = static_cast<size_t>(std::find(series.begin(), series.end(), p.series) - series.begin());
    const double x = f.map_x(p.arithmetic_intensity), y = f.map_y(p.achieved_tflops);
    out += fmt::format(
        "<circle class=\"point\" data-series=\"{}\" data-x=\"{:g}\" data-y=\"{:g}\" cx=\"{:.2f}\" cy=\"{:.2f}\" "
        "r=\"5\" "
        "fill=\"{}\"><title>{} {}: {:.1f} FLOP/B, {:.3g} TFLOP/s</title></circle>\n",
        xml_escape(p.series), p.arithmetic_intensity, p.achieved_tflops, x, y, series_colour(colour),
        xml_escape(p.series), xml_escape(p.label), p.arithmetic_intensity, p.achieved_tflops);
    out += fmt::format("<text x=\"{:.2f}\" y=\"{:.2f}\" font-size=\"10\" fill=\"#333\">{}</text>\n", x + 7, y + 3,
                       xml_escape(p.label));
  }
  out += draw_legend(series, f);
  return out + "</svg>\n";
}

}  // namespace crosspoint::analysis
