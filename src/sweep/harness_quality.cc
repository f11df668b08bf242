#include "sweep/harness_quality.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <tuple>

namespace crosspoint::sweep {

Result<std::vector<HarnessScore>> harness_scores_from_json(const nlohmann::json& file, const std::string& origin) {
  if (!file.is_object() || !file.contains("results") || !file["results"].is_object())
    return invalid_argument(origin + ": no \"results\" object (an lm-evaluation-harness results file?)");
  std::vector<HarnessScore> scores;
  for (const auto& [task, metrics] : file["results"].items()) {
    if (!metrics.is_object()) continue;
    std::map<std::string, HarnessScore> by_metric;
    for (const auto& [key, value] : metrics.items()) {
      if (!value.is_number()) continue;  // alias, name
      // "acc,none", "acc_stderr,none", "exact_match,strict-match"; sample_len has no filter.
      const size_t comma = key.find(',');
      if (comma == std::string::npos) continue;
      std::string metric = key.substr(0, comma);
      const std::string filter = key.substr(comma + 1);
      const bool is_stderr = metric.size() > 7 && metric.compare(metric.size() - 7, 7, "_stderr") == 0;
      if (is_stderr) metric.resize(metric.size() - 7);
      const std::string name = filter == "none" ? metric : metric + "," + filter;
      HarnessScore& score = by_metric[name];
      score.task = task;
      score.metric = name;
      if (is_stderr) score.stderr_value = value.get<double>();
      else score.value = value.get<double>();
    }
    for (auto& [name, score] : by_metric) scores.push_back(std::move(score));
  }
  if (scores.empty()) return invalid_argument(origin + ": its \"results\" hold no metric");
  std::sort(scores.begin(), scores.end(), [](const HarnessScore& a, const HarnessScore& b) {
    return std::tie(a.task, a.metric) < std::tie(b.task, b.metric);
  });
  return scores;
}

std::string harness_results_path(const std::string& out_dir, const std::string& precision) {
  return out_dir + "/quality/" + precision + ".lm_eval.json";
}

Status parse_harness_results(const std::string& text, const std::vector<std::string>& precisions,
                             std::vector<std::pair<std::string, std::string>>& out) {
  const size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    return invalid_argument("--harness-results: '" + text + "' is not PRECISION=FILE (e.g. w4a16=results.json)");
  const std::string precision = text.substr(0, eq);
  if (std::find(precisions.begin(), precisions.end(), precision) == precisions.end())
    return invalid_argument("--harness-results: " + precision + " is not in --precisions");
  for (const auto& [given, file] : out) {
    if (given == precision) return invalid_argument("--harness-results: " + precision + " given twice");
  }
  out.emplace_back(precision, text.substr(eq + 1));
  return Status::ok();
}

analysis::TextTable harness_quality_table(
    const std::vector<std::pair<std::string, std::vector<HarnessScore>>>& by_precision) {
  analysis::TextTable table;
  table.header = {"task", "metric"};
  table.right_align = {false, false};
  const std::vector<HarnessScore>* fp16 = nullptr;
  for (const auto& [precision, scores] : by_precision) {
    table.header.push_back(precision);
    table.right_align.push_back(true);
    if (precision == "fp16") fp16 = &scores;
  }
  if (fp16) {
    for (const auto& [precision, scores] : by_precision) {
      if (precision == "fp16") continue;
      table.header.push_back("Δ " + precision);
      table.right_align.push_back(true);
    }
  }
  std::map<std::pair<std::string, std::string>, std::map<std::string, const HarnessScore*>> rows;
  for (const auto& [precision, scores] : by_precision)
    for (const HarnessScore& s : scores) rows[{s.task, s.metric}][precision] = &s;
  for (const auto& [key, cells] : rows) {
    std::vector<std::string> row = {key.first, key.second};
    for (const auto& [precision, scores] : by_precision) {
      auto it = cells.find(precision);
      if (it == cells.end()) {
        row.push_back("-");
        continue;
      }
      const HarnessScore& s = *it->second;
      row.push_back(s.stderr_value ? fmt::format("{:.4f} ± {:.4f}", s.value, *s.stderr_value)
                                   : fmt::format("{:.4f}", s.value));
    }
    if (fp16) {
      auto base = cells.find("fp16");
      for (const auto& [precision, scores] : by_precision) {
        if (precision == "fp16") continue;
        auto it = cells.find(precision);
        row.push_back(base == cells.end() || it == cells.end()
                          ? "-"
                          : fmt::format("{:+.1f} pt", 100.0 * (it->second->value - base->second->value)));
      }
    }
    table.rows.push_back(std::move(row));
  }
  return table;
}

}  // namespace crosspoint::sweep
