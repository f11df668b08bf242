// The report's first screen (1400 x 900 in a browser, no scrolling): the title, one line on the
// model and device, the verdict (verdict.h) and two figures: median TPOT against concurrency
// with its intervals as bands and each crossover marked, and throughput against median TPOT
// (the Pareto view) with the concurrency of every point.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "analysis/study_analysis.h"
#include "analysis/svg_plot.h"
#include "analysis/verdict.h"

namespace crosspoint::analysis {

// Median TPOT per label over concurrency, each label's intervals as a band, the headline's
// median-TPOT crossovers as shaded brackets.
LinePlot median_tpot_band_plot(const StudyResults& study, const StudyAnalysis& analysis);

// Output throughput against median TPOT, one path per label through its levels, each point
// labelled with its concurrency.
LinePlot pareto_plot(const StudyResults& study);

// "771 TFLOP/s fp16 (measured)": the math rate the roofline uses for fp16 and W4A16, with
// enough digits for a CPU's 0.03, and where it came from.
std::string describe_fp16_rate(const HardwareCeilings& hardware);

struct FirstScreen {
  std::string markdown;
  std::string html;
  std::vector<std::pair<std::string, std::string>> figures;  // file name, SVG
};

FirstScreen render_first_screen(const std::string& title, const std::string& meta,
                                const std::vector<VerdictLine>& verdict, const StudyResults& study,
                                const StudyAnalysis& analysis);

}  // namespace crosspoint::analysis
