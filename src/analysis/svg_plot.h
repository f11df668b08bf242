// Self-contained SVG charts for the report: line plots over concurrency (log x), grouped
// bars, and the roofline (log-log) with every cell as a point. Plain strings, no library;
// every data point carries class="point" and data-series/data-x/data-y attributes so tests
// (and readers of the file) can find it.
#pragma once

#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace crosspoint::analysis {

// Maps data coordinates into the plot area of an SVG canvas.
struct PlotFrame {
  double x_min = 0, x_max = 1, y_min = 0, y_max = 1;  // data range shown
  bool log_x = false, log_y = false;
  double left = 70, right = 20, top = 40, bottom = 50;  // margins, px
  double width = 640, height = 400;                     // canvas, px

  double map_x(double x) const;  // data -> px from the canvas' left
  double map_y(double y) const;  // data -> px from the canvas' top
};

struct PlotSeries {
  std::string name;
  std::vector<std::pair<double, double>> points;  // (x, y), drawn in x order
  bool dashed = false;
  int colour_index = -1;  // palette entry; -1 = the series' position
  // Optional vertical error bars (x, lower, upper), drawn as class="error-bar" lines.
  std::vector<std::tuple<double, double, double>> error_bars = {};
  // Draw error_bars as one translucent band (class="band") through the intervals instead.
  bool band = false;
  // Optional text beside each point, in the order of points ("c=16").
  std::vector<std::string> point_labels = {};
};

// A shaded range of x with a label (class="x-span"): where a crossover lies.
struct PlotSpan {
  double x_lower = 0, x_upper = 0;
  std::string label;
};

struct LinePlot {
  std::string title;
  std::string x_label;
  std::string y_label;
  bool log_x = true;  // concurrency axes are logarithmic
  bool log_y = false;
  bool connect_in_order = false;  // join points in the order given (a path through levels), not by x
  std::vector<PlotSeries> series;
  std::vector<PlotSpan> spans;
  double width = 520, height = 380;
};

struct BarGroup {
  std::string label;           // "conc 10"
  std::vector<double> values;  // one per series; negative or NaN = missing
};

struct GroupedBarChart {
  std::string title;
  std::string y_label;
  std::vector<std::string> series_names;
  std::vector<BarGroup> groups;
  double width = 520, height = 380;
};

struct RooflinePoint {
  std::string series;               // precision
  std::string label;                // "c=10"
  double arithmetic_intensity = 0;  // FLOP/byte
  double achieved_tflops = 0;       // TFLOP/s
};

struct RooflineCeiling {
  std::string name;  // "fp16 121 TFLOP/s"
  double peak_tflops = 0;
};

struct RooflinePlot {
  std::string title;
  double bandwidth_gb_s = 0;
  std::vector<RooflineCeiling> ceilings;
  std::vector<RooflinePoint> points;
  double width = 640, height = 420;
};

// The frames the renderers use, so tests can predict where a point lands.
PlotFrame line_plot_frame(const LinePlot& plot);
PlotFrame roofline_plot_frame(const RooflinePlot& plot);

std::string render_line_plot(const LinePlot& plot);
std::string render_grouped_bars(const GroupedBarChart& chart);
std::string render_roofline_plot(const RooflinePlot& plot);

// The colour of series i (a fixed palette that reads in print and for colour-blind eyes).
const char* series_colour(size_t index);

}  // namespace crosspoint::analysis
