// The study's report from its analysis: report.md (figures as SVG files beside it) and a
// self-contained report.html (figures inline). The building blocks for `crosspoint sweep`.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "analysis/study_analysis.h"
#include "analysis/study_results.h"
#include "common/status.h"

namespace crosspoint::analysis {

struct ReportFiles {
  std::string markdown;                                      // report.md
  std::string html;                                          // report.html
  std::vector<std::pair<std::string, std::string>> figures;  // (file name, SVG text)
};

ReportFiles render_study_report(const StudyResults& study, const StudyAnalysis& analysis);

// Writes report.md, report.html and the figures into dir (created if missing).
Status write_report(const std::string& dir, const ReportFiles& files);

}  // namespace crosspoint::analysis
