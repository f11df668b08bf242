// When the sample cannot tell the precisions' speed apart, the report still says what to serve:
// among the precisions no level puts separably behind, the one that loses the least quality
// against FP16, and which one needs the least memory if that is the constraint.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "analysis/crossover.h"
#include "sweep/sweep_report.h"

namespace crosspoint::sweep {

struct SpeedTieChoice {
  std::vector<std::string> contenders;  // not separably slower at any undecided level, in first-seen order
  std::vector<std::string> behind;      // separably slower at every undecided level
  std::vector<double> levels;           // the undecided levels (no winner: a tie or not separable)
  std::string choice;                   // the contender with the smallest quality cost; empty if unknown
  std::optional<double> choice_perplexity_delta_pct;  // its perplexity against FP16 (absent for fp16)
  std::string smallest_weights;                       // the contender with the smallest weights, when known
  std::optional<double> smallest_weights_gib;
  std::optional<double> smallest_weights_perplexity_delta_pct;  // its quality cost, when measured
};

// From the levels of one speed metric where no precision won (tie or not separable), the
// quality results against FP16 and each precision's weights in GiB. The choice is empty when a
// contender other than fp16 has no quality result (nothing decides then).
SpeedTieChoice choose_on_a_speed_tie(const std::vector<analysis::LevelWinner>& levels,
                                     const std::vector<QualityResult>& qualities,
                                     const std::map<std::string, double>& weights_gib);

// The "In short" sentence for that case, naming the metric ("median TPOT").
std::string speed_tie_sentence(const SpeedTieChoice& tie, const std::string& metric_name);

}  // namespace crosspoint::sweep
