// The study's report from its analysis: report.md (figures as SVG files beside it) and a
// self-contained report.html (figures inline). The building blocks for `crosspoint sweep`.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "analysis/study_analysis.h"
#include "analysis/study_results.h"
#include "analysis/verdict.h"
#include "common/status.h"

namespace crosspoint::analysis {

struct ReportFiles {
  std::string markdown;                                      // report.md
  std::string html;                                          // report.html
  std::vector<std::pair<std::string, std::string>> figures;  // (file name, SVG text)
};

// One level of a metric in words, with the two best values and their intervals:
// "w4a16 at 4 (w4a16 2.19 ms [2.15, 2.24] vs fp16 2.40 ms [2.31, 2.52], by 9.6 %)",
// "not separable at 8 at this sample size (intervals overlap: ...)", "tie at 1 (1.2 %: w4a16,
// w4a16+kv-fp8)"; " [measured under interference]" appended when either cell was.
std::string describe_level(const LevelWinner& level, Metric metric);

// The precisions a tied level cannot tell apart, best first (its contenders, else the two best):
// "w4a16, w4a16+kv-fp8"; empty when fewer than two are known.
std::string tied_names(const LevelWinner& level);

// "2.19 [2.15, 2.24]" (or the value alone without an interval).
std::string format_with_interval(double value, const std::optional<Interval>& interval, int decimals);

// What the report knows beyond the cells: the quality of each quantised precision (the
// verdict's quality line; crosspoint sweep measures it).
struct ReportExtras {
  std::vector<QualityCost> quality;
};

// The first screen (first_screen.h: title, a one-line setting, the verdict, two figures), then
// the detailed sections, each under a heading that says what it answers.
ReportFiles render_study_report(const StudyResults& study, const StudyAnalysis& analysis,
                                const ReportExtras& extras = {});

// Writes report.md, report.html and the figures into dir (created if missing).
Status write_report(const std::string& dir, const ReportFiles& files);

}  // namespace crosspoint::analysis
