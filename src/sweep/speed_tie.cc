#include "sweep/speed_tie.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "sweep/served_label.h"

namespace crosspoint::sweep {
namespace {

bool contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// "a", "a and b", "a, b and c".
std::string join_names(const std::vector<std::string>& names) {
  if (names.size() <= 1) return names.empty() ? std::string() : names.front();
  std::vector<std::string> head(names.begin(), names.end() - 1);
  return fmt::format("{} and {}", fmt::join(head, ", "), names.back());
}

}  // namespace

SpeedTieChoice choose_on_a_speed_tie(const std::vector<analysis::LevelWinner>& levels,
                                     const std::vector<QualityResult>& qualities,
                                     const std::map<std::string, double>& weights_gib) {
  SpeedTieChoice tie;
  std::vector<std::string> measured;
  for (const analysis::LevelWinner& level : levels) {
    if (!level.winner.empty()) continue;
    tie.levels.push_back(level.concurrency);
    for (const std::string& p : level.contenders) {
      if (!contains(tie.contenders, p)) tie.contenders.push_back(p);
    }
    for (const std::string& p : level.ranked) {
      if (!contains(measured, p)) measured.push_back(p);
    }
  }
  // Measured at the undecided levels but never among the contenders there.
  for (const std::string& p : measured) {
    if (!contains(tie.contenders, p)) tie.behind.push_back(p);
  }
  // Quality cost against FP16: 0 for fp16 itself, else the perplexity increase.
  auto quality_cost = [&](const std::string& label) -> std::optional<double> {
    const std::string p = quality_label_of(label);  // prefix caching leaves the outputs as they are
    if (p == "fp16") return 0.0;
    for (const QualityResult& q : qualities) {
      if (q.precision == p && q.perplexity_change_pct()) return q.perplexity_change_pct();
    }
    return std::nullopt;
  };
  std::optional<double> best_delta;
  bool all_known = true;
  for (const std::string& p : tie.contenders) {
    const std::optional<double> delta = quality_cost(p);
    if (!delta) {
      all_known = false;
      continue;
    }
    if (!best_delta || *delta < *best_delta) {
      best_delta = delta;
      tie.choice = p;
    }
  }
  if (!all_known) tie.choice.clear();
  if (!tie.choice.empty() && tie.choice != "fp16") tie.choice_perplexity_delta_pct = best_delta;
  for (const std::string& p : tie.contenders) {
    auto it = weights_gib.find(p);
    if (it == weights_gib.end()) continue;
    if (!tie.smallest_weights_gib || it->second < *tie.smallest_weights_gib) {
      tie.smallest_weights = p;
      tie.smallest_weights_gib = it->second;
    }
  }
  if (!tie.smallest_weights.empty() && tie.smallest_weights != "fp16")
    tie.smallest_weights_perplexity_delta_pct = quality_cost(tie.smallest_weights);
  return tie;
}

std::string speed_tie_sentence(const SpeedTieChoice& tie, const std::string& metric_name) {
  std::vector<std::string> levels;
  for (double level : tie.levels) levels.push_back(fmt::format("{:g}", level));
  std::string text;
  if (tie.contenders.size() >= 2) {
    text = fmt::format("In short: on {} this sample cannot tell {} apart at {}", metric_name,
                       join_names(tie.contenders), fmt::join(levels, ", "));
  } else {
    text = fmt::format("In short: on {} no precision is separably ahead at {}", metric_name, fmt::join(levels, ", "));
  }
  if (!tie.behind.empty()) text += fmt::format(" ({} separably slower there)", join_names(tie.behind));
  if (tie.choice.empty()) {
    return text +
           ", and quality was not measured for all of them, so nothing here decides between them: measure more "
           "requests (--time-budget, --repeats) or quality (--eval-samples).";
  }
  text += fmt::format(". Speed does not decide between them here, so quality does: serve {} — {}", tie.choice,
                      tie.choice_perplexity_delta_pct
                          ? fmt::format("the smallest quality cost among them (perplexity {:+.2f} % against fp16)",
                                        *tie.choice_perplexity_delta_pct)
                          : std::string("the reference, with no quality cost"));
  if (!tie.smallest_weights.empty() && tie.smallest_weights != tie.choice)
    text +=
        fmt::format("; if memory is the constraint, {} has the smallest weights ({:.3f} GiB{})", tie.smallest_weights,
                    *tie.smallest_weights_gib,
                    tie.smallest_weights_perplexity_delta_pct
                        ? fmt::format(", perplexity {:+.2f} % against fp16", *tie.smallest_weights_perplexity_delta_pct)
                        : std::string());
  return text + ". A larger sample (--time-budget, --repeats) may still separate them on speed.";
}

}  // namespace crosspoint::sweep
