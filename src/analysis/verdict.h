// The report's first lines: one short answer per question a reader brings (which precision
// for latency, tail latency and throughput, where that changes, how much load within the SLO,
// at what quality cost, how sure), read off the headline comparison across weight precisions.
// The numbers with their intervals stay in the tables below.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "analysis/study_analysis.h"

namespace crosspoint::analysis {

struct VerdictLine {
  std::string question;  // "Lowest latency (median TPOT)"
  std::string answer;    // "w4a16 at 1, 10 (by 19-24 %); w8a8-fp8 at 100 (by 2.5 %)"
};

// A quantised precision's quality against fp16, when the study measured it.
struct QualityCost {
  std::string label;
  double perplexity_change_pct = 0;        // +1.5 = perplexity 1.5 % above fp16's
  std::optional<double> greedy_agreement;  // 0..1
};

// "w4a16 at 1, 10 (by 19-24 %); w8a8-fp8 at 100 (by 2.5 %); tie at 32": who wins each level
// clearly, then the levels that are ties (within the tolerance) or undecided (intervals overlap).
std::string summarize_headline(const HeadlineMetric& metric);

// "median TPOT: w4a16 -> w8a8-fp8 between 10 and 100", one per headline metric with a crossover,
// or "none in 1-100" when no metric has one.
std::string describe_crossovers(const StudyAnalysis& analysis);

// "w4a16 up to 64 (goodput 12.1 req/s; misses at 256), fp16 up to 16 (...), w8a8-fp8 not at 1".
std::string describe_slo_capacity(const SloAnalysis& slo);

// "decided at 7 of 9 compared levels (95 % intervals apart); tie within 2 % at 1; ...".
std::string describe_certainty(const StudyAnalysis& analysis);

std::vector<VerdictLine> build_verdict(const StudyAnalysis& analysis, const std::vector<QualityCost>& quality);

}  // namespace crosspoint::analysis
