#include "sweep/axis_effects.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "analysis/crossover.h"
#include "sweep/served_label.h"

namespace crosspoint::sweep {
namespace {

using analysis::CellMeasurement;
using analysis::Metric;

const CellMeasurement* find_cell(const std::vector<CellMeasurement>& cells, const std::string& label,
                                 double concurrency) {
  for (const CellMeasurement& c : cells) {
    if (c.precision == label && c.concurrency == concurrency) return &c;
  }
  return nullptr;
}

// Three significant figures or so: 1234, 123.4, 12.34.
std::string number(double v) {
  const double a = std::abs(v);
  if (a >= 100) return fmt::format("{:.0f}", v);
  if (a >= 10) return fmt::format("{:.1f}", v);
  return fmt::format("{:.2f}", v);
}

// A concurrency level: "64", or "12.5" for a fractional one.
std::string level_text(double level) {
  return level == std::floor(level) ? fmt::format("{:.0f}", level) : fmt::format("{:g}", level);
}

// "183 → 120 (-34 %)", or what is known of it.
std::string change(std::optional<double> base, std::optional<double> variant) {
  if (!base && !variant) return "";
  if (!base) return "– → " + number(*variant);
  if (!variant) return number(*base) + " → –";
  std::string text = number(*base) + " → " + number(*variant);
  if (*base != 0) text += fmt::format(" ({:+.0f} %)", 100.0 * (*variant / *base - 1.0));
  return text;
}

std::string preemptions(const CellMeasurement& base, const CellMeasurement& variant) {
  if (!base.num_preemptions && !variant.num_preemptions) return "";
  auto one = [](const CellMeasurement& c) { return c.num_preemptions ? std::to_string(*c.num_preemptions) : "–"; };
  return one(base) + " → " + one(variant);
}

std::string percent(std::optional<double> fraction) {
  return fraction ? fmt::format("{:.0f} %", 100.0 * *fraction) : "–";
}

std::string describe_setup(const ServedSetup& s) {
  std::string text = s.kv_cache_dtype == "fp8" ? "an fp8 KV cache" : "the device's own KV cache";
  if (s.prefix_caching == "on") text += ", prefix caching on";
  if (s.prefix_caching == "off") text += ", prefix caching off";
  return text;
}

std::optional<double> perplexity_delta(const AxisEffectsInputs& in, const std::string& label) {
  const std::string q = quality_label_of(label);
  if (q == "fp16") return 0.0;
  const auto it = in.perplexity_delta_pct.find(q);
  if (it == in.perplexity_delta_pct.end()) return std::nullopt;
  return it->second;
}

AxisEffectPart pair_part(const AxisEffectsInputs& in, const AxisPair& pair) {
  AxisEffectPart part;
  part.title = (pair.axis == "kv" ? "fp8 KV cache: " : "Prefix caching: ") + pair.variant + " against " + pair.base;
  if (pair.axis == "kv") {
    const auto base_kv = in.kv_cache_tokens.find(pair.base), variant_kv = in.kv_cache_tokens.find(pair.variant);
    if (base_kv != in.kv_cache_tokens.end() && variant_kv != in.kv_cache_tokens.end() && base_kv->second > 0) {
      part.facts.push_back(fmt::format("KV capacity: {:.0f} → {:.0f} tokens ({:.2f}x).", base_kv->second,
                                       variant_kv->second, variant_kv->second / base_kv->second));
    }
    const std::optional<double> base_q = perplexity_delta(in, pair.base),
                                variant_q = perplexity_delta(in, pair.variant);
    if (base_q && variant_q) {
      part.facts.push_back(
          fmt::format("Perplexity against fp16 (crosspoint eval): {:+.2f} % → {:+.2f} %.", *base_q, *variant_q));
    }
  }
  std::set<double> levels;
  for (const CellMeasurement& c : in.cells) {
    if (c.precision == pair.base && find_cell(in.cells, pair.variant, c.concurrency)) levels.insert(c.concurrency);
  }
  bool any_hits = false;
  for (double level : levels) {
    const CellMeasurement& b = *find_cell(in.cells, pair.base, level);
    const CellMeasurement& v = *find_cell(in.cells, pair.variant, level);
    any_hits = any_hits || b.prefix_cache_hit_rate || v.prefix_cache_hit_rate;
  }
  part.table.header = {"concurrency", "median TTFT ms", "median TPOT ms", "output tok/s", "preemptions"};
  if (any_hits) part.table.header.push_back("prefix-cache hits");
  part.table.right_align.assign(part.table.header.size(), true);
  for (double level : levels) {
    const CellMeasurement& b = *find_cell(in.cells, pair.base, level);
    const CellMeasurement& v = *find_cell(in.cells, pair.variant, level);
    std::vector<std::string> row = {level_text(level), change(b.median_ttft_ms, v.median_ttft_ms),
                                    change(b.median_tpot_ms, v.median_tpot_ms),
                                    change(b.output_throughput_tok_s, v.output_throughput_tok_s), preemptions(b, v)};
    if (any_hits) row.push_back(percent(b.prefix_cache_hit_rate) + " → " + percent(v.prefix_cache_hit_rate));
    part.table.rows.push_back(std::move(row));
  }
  return part;
}

std::string crossover_text(const std::vector<CellMeasurement>& cells, Metric metric, double tolerance) {
  const std::vector<analysis::Crossover> flips = analysis::find_crossovers(cells, metric, tolerance);
  if (!flips.empty()) {
    std::vector<std::string> items;
    for (const analysis::Crossover& x : flips) {
      items.push_back(fmt::format("{} → {} between {} and {}", weight_precision_of(x.winner_below),
                                  weight_precision_of(x.winner_above), level_text(x.concurrency_below),
                                  level_text(x.concurrency_above)));
    }
    return fmt::format("{}", fmt::join(items, "; "));
  }
  std::set<std::string> winners;
  for (const analysis::LevelWinner& w : analysis::winners_by_concurrency(cells, metric, tolerance)) {
    if (!w.tie) winners.insert(weight_precision_of(w.winner));
  }
  if (winners.size() == 1) return "none, " + *winners.begin() + " leads wherever one leads";
  return "none found";
}

}  // namespace

std::vector<AxisPair> axis_pairs(const std::vector<std::string>& labels) {
  std::vector<AxisPair> pairs;
  auto has = [&](const std::string& label) { return std::find(labels.begin(), labels.end(), label) != labels.end(); };
  for (const std::string& label : labels) {
    const ServedSetup s = served_setup_of(label);
    if (s.kv_cache_dtype == "auto") {
      const std::string fp8 = served_label(s.precision, "fp8", s.prefix_caching);
      if (has(fp8)) pairs.push_back({"kv", label, fp8});
    }
    if (s.prefix_caching == "off") {
      const std::string on = served_label(s.precision, s.kv_cache_dtype, "on");
      if (has(on)) pairs.push_back({"prefix", label, on});
    }
  }
  return pairs;
}

AxisEffects axis_effects(const AxisEffectsInputs& in) {
  AxisEffects out;
  for (const AxisPair& pair : axis_pairs(in.labels)) out.parts.push_back(pair_part(in, pair));
  // Labels grouped by everything but the weights, in the sweep's order.
  std::vector<std::pair<std::string, std::vector<std::string>>> groups;
  for (const std::string& label : in.labels) {
    const ServedSetup s = served_setup_of(label);
    const std::string key = describe_setup(s);
    auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == key; });
    if (it == groups.end()) groups.push_back({key, {label}});
    else it->second.push_back(label);
  }
  const size_t comparable =
      std::count_if(groups.begin(), groups.end(), [](const auto& g) { return g.second.size() >= 2; });
  if (comparable < 2) return out;
  for (const auto& [description, labels] : groups) {
    if (labels.size() < 2) continue;
    std::vector<CellMeasurement> cells;
    for (const CellMeasurement& c : in.cells) {
      if (std::find(labels.begin(), labels.end(), c.precision) != labels.end()) cells.push_back(c);
    }
    out.crossover_lines.push_back(fmt::format("With {}: median TPOT {}; output throughput {}.", description,
                                              crossover_text(cells, Metric::kMedianTpot, in.tie_tolerance),
                                              crossover_text(cells, Metric::kOutputThroughput, in.tie_tolerance)));
  }
  return out;
}

}  // namespace crosspoint::sweep
