#include "analysis/verdict.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

namespace crosspoint::analysis {

namespace {

const HeadlineMetric* find_headline(const StudyAnalysis& analysis, Metric metric) {
  for (const HeadlineMetric& h : analysis.headline) {
    if (h.metric == metric) return &h;
  }
  return nullptr;
}

std::string levels_text(const std::vector<double>& levels) {
  std::vector<std::string> parts;
  for (double c : levels) parts.push_back(fmt::format("{:g}", c));
  return fmt::format("{}", fmt::join(parts, ", "));
}

std::string percent(double fraction) {
  const double pct = fraction * 100;
  return pct >= 10 ? fmt::format("{:.0f}", pct) : fmt::format("{:.1f}", pct);
}

// The measured range of the metric: "1-512".
std::string range_text(const HeadlineMetric& m) {
  return fmt::format("{:g}–{:g}", m.winners.front().concurrency, m.winners.back().concurrency);
}

}  // namespace

std::string summarize_headline(const HeadlineMetric& m) {
  if (m.winners.empty()) return "not enough cells to compare";
  struct Segment {
    std::string label;
    std::vector<double> levels;
    double min_margin = 0, max_margin = 0;
  };
  std::vector<Segment> segments;
  std::vector<double> ties, undecided;
  for (const LevelWinner& w : m.winners) {
    if (w.not_separable) {
      undecided.push_back(w.concurrency);
      continue;
    }
    if (w.tie) {
      ties.push_back(w.concurrency);
      continue;
    }
    if (segments.empty() || segments.back().label != w.winner) {
      segments.push_back({w.winner, {}, w.margin, w.margin});
    }
    Segment& s = segments.back();
    s.levels.push_back(w.concurrency);
    s.min_margin = std::min(s.min_margin, w.margin);
    s.max_margin = std::max(s.max_margin, w.margin);
  }
  std::vector<std::string> parts;
  for (const Segment& s : segments) {
    const std::string margin = percent(s.min_margin) == percent(s.max_margin)
                                   ? percent(s.min_margin)
                                   : percent(s.min_margin) + "–" + percent(s.max_margin);
    parts.push_back(fmt::format("{} at {} (by {} %)", s.label, levels_text(s.levels), margin));
  }
  std::string text = segments.empty() ? "no precision clearly ahead" : fmt::format("{}", fmt::join(parts, "; "));
  if (!ties.empty()) text += "; tie at " + levels_text(ties);
  if (!undecided.empty()) text += "; undecided at " + levels_text(undecided);
  return text;
}

std::string describe_crossovers(const StudyAnalysis& analysis) {
  std::vector<std::string> parts;
  std::string range;
  for (const HeadlineMetric& m : analysis.headline) {
    if (range.empty()) range = range_text(m);
    std::vector<std::string> flips;
    for (const Crossover& c : m.crossovers) {
      flips.push_back(fmt::format("{} → {} between {:g} and {:g}", c.winner_below, c.winner_above, c.concurrency_below,
                                  c.concurrency_above));
    }
    const std::string name =
        m.metric == Metric::kGoodput ? "goodput within the SLO" : std::string(metric_name(m.metric));
    if (!flips.empty()) parts.push_back(fmt::format("{}: {}", name, fmt::join(flips, ", ")));
  }
  if (parts.empty()) return range.empty() ? "no levels to compare" : "no crossover in " + range;
  return fmt::format("{}", fmt::join(parts, "; "));
}

std::string describe_slo_capacity(const SloAnalysis& slo) {
  // Labels with the same outcome and no goodput of their own share one entry: "fp16, w4a16 up to 64 (...)".
  std::vector<std::pair<std::vector<std::string>, std::string>> groups;  // labels, what follows them
  for (const SloCapacity& c : slo.capacity) {
    std::string outcome;
    if (!c.max_concurrency && !c.first_failing) {
      outcome = ": no data for the SLO";
    } else {
      std::vector<std::string> details;
      if (c.max_concurrency && c.goodput_req_s)
        details.push_back(fmt::format("goodput {:.3g} req/s", *c.goodput_req_s));
      if (c.first_failing) details.push_back(fmt::format("misses at {:g}", *c.first_failing));
      if (!c.no_data_levels.empty()) details.push_back("no data at " + levels_text(c.no_data_levels));
      outcome = c.max_concurrency ? fmt::format(" up to {:g}", *c.max_concurrency) : " at no level";
      if (!details.empty()) outcome += fmt::format(" ({})", fmt::join(details, "; "));
    }
    const bool has_goodput = c.max_concurrency && c.goodput_req_s;
    auto same = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.second == outcome; });
    if (same != groups.end() && !has_goodput) {
      same->first.push_back(c.label);
    } else {
      groups.push_back({{c.label}, outcome});
    }
  }
  std::vector<std::string> parts;
  for (const auto& [labels, outcome] : groups) {
    const std::string names = labels.size() > 2 && groups.size() == 1 ? "all " + std::to_string(labels.size())
                                                                      : fmt::format("{}", fmt::join(labels, ", "));
    parts.push_back(names + outcome);
  }
  return parts.empty() ? "no cells" : fmt::format("{}", fmt::join(parts, "; "));
}

std::string describe_certainty(const StudyAnalysis& analysis) {
  size_t compared = 0, decided = 0;
  std::vector<std::string> ties, undecided;
  bool any_interval = false;
  for (const HeadlineMetric& m : analysis.headline) {
    if (m.metric == Metric::kGoodput) continue;  // goodput has no interval
    std::vector<double> metric_ties, metric_undecided;
    for (const LevelWinner& w : m.winners) {
      ++compared;
      any_interval = any_interval || (w.best_interval && w.runner_up_interval);
      if (w.not_separable) {
        metric_undecided.push_back(w.concurrency);
      } else if (w.tie) {
        metric_ties.push_back(w.concurrency);
      } else {
        ++decided;
      }
    }
    // "output throughput at 8, 16": one entry per metric.
    if (!metric_undecided.empty())
      undecided.push_back(fmt::format("{} at {}", metric_name(m.metric), levels_text(metric_undecided)));
    if (!metric_ties.empty()) ties.push_back(fmt::format("{} at {}", metric_name(m.metric), levels_text(metric_ties)));
  }
  std::string text = any_interval
                         ? fmt::format("decided at {} of {} compared levels (95 % intervals apart)", decided, compared)
                         : fmt::format(
                               "decided at {} of {} compared levels by a margin over {:g} % alone (no per-request "
                               "data, so no intervals)",
                               decided, compared, analysis.tie_tolerance * 100);
  if (!undecided.empty()) text += fmt::format("; undecided: {}", fmt::join(undecided, "; "));
  if (!ties.empty())
    text += fmt::format("; tie within {:g} %: {}", analysis.tie_tolerance * 100, fmt::join(ties, "; "));
  size_t interfered = 0;
  for (const CellMeasurement& c : analysis.cells) interfered += c.interfered ? 1 : 0;
  if (interfered > 0)
    text += fmt::format("; {} of {} cells measured under interference", interfered, analysis.cells.size());
  return text;
}

std::vector<VerdictLine> build_verdict(const StudyAnalysis& analysis, const std::vector<QualityCost>& quality) {
  std::vector<VerdictLine> lines;
  const std::pair<Metric, const char*> questions[] = {{Metric::kMedianTpot, "Lowest latency (median TPOT)"},
                                                      {Metric::kP99Tpot, "Lowest tail latency (p99 TPOT)"},
                                                      {Metric::kOutputThroughput, "Most throughput (output tok/s)"}};
  for (const auto& [metric, question] : questions) {
    const HeadlineMetric* m = find_headline(analysis, metric);
    lines.push_back({question, m ? summarize_headline(*m) : "not recorded by these cells"});
  }
  if (analysis.throughput_per_device)
    lines.push_back({"Most throughput per device (output tok/s ÷ the devices a split uses)",
                     summarize_headline(*analysis.throughput_per_device)});
  lines.push_back({"Where the answer changes", describe_crossovers(analysis)});
  lines.push_back({fmt::format("Load within the SLO ({}{})", describe_slo(analysis.slo.slo),
                               analysis.slo.slo.is_default ? ", the default" : ""),
                   describe_slo_capacity(analysis.slo)});
  std::string cost;
  for (const QualityCost& q : quality) {
    cost += fmt::format("{}{} {:+.2f} % perplexity", cost.empty() ? "" : ", ", q.label, q.perplexity_change_pct);
    if (q.greedy_agreement) cost += fmt::format(" ({:.0f} % greedy agreement)", *q.greedy_agreement * 100);
  }
  lines.push_back({"Quality cost against fp16", cost.empty() ? "not measured in this study" : cost});
  lines.push_back({"How sure", describe_certainty(analysis)});
  return lines;
}

}  // namespace crosspoint::analysis
