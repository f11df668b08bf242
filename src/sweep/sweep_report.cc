#include "sweep/sweep_report.h"

#include "sweep/engine.h"

#include "common/utc_time.h"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "analysis/hardware_json.h"
#include "analysis/markdown_table.h"
#include "analysis/model_shape.h"
#include "analysis/study_report.h"
#include "sweep/served_model.h"
#include "sweep/speed_tie.h"
#include "sweep/axis_effects.h"
#include "sweep/served_label.h"
#include "sweep/sweep_runner.h"

namespace crosspoint::sweep {
namespace fs = std::filesystem;
using analysis::CellMeasurement;
using analysis::Metric;

namespace {

std::optional<nlohmann::json> read_json(const std::string& path) {
  if (!fs::is_regular_file(path)) return std::nullopt;
  nlohmann::json j = nlohmann::json::parse(read_text_file(path), nullptr, false);
  if (j.is_discarded()) return std::nullopt;
  return j;
}

// "cells measured 2026-11-30 06:51 to 07:06 (bench clock); " from the cells' bench dates
// (vLLM's YYYYMMDD-HHMMSS, the bench machine's local time), or "" when none has one.
std::string measured_span(const nlohmann::json& cells) {
  std::string first, last;
  for (const auto& cell : cells) {
    if (!cell.contains("date") || !cell["date"].is_string()) continue;
    const std::string d = cell["date"].get<std::string>();
    if (d.size() != 15 || d[8] != '-') continue;
    if (first.empty() || d < first) first = d;
    if (last.empty() || d > last) last = d;
  }
  if (first.empty()) return "";
  auto day = [](const std::string& d) { return d.substr(0, 4) + "-" + d.substr(4, 2) + "-" + d.substr(6, 2); };
  auto minute = [](const std::string& d) { return d.substr(9, 2) + ":" + d.substr(11, 2); };
  const std::string end = day(first) == day(last) ? minute(last) : day(last) + " " + minute(last);
  return "cells measured " + day(first) + " " + minute(first) + (first == last ? "" : " to " + end) +
         " (bench clock); ";
}

std::string fixed(std::optional<double> v, int digits) {
  return v ? fmt::format("{:.{}f}", *v, digits) : std::string("–");
}

// A paragraph (or list item) in both outputs; text is plain (escaped for HTML here).
struct Fragments {
  std::string md, html;
  void heading(const std::string& text) {
    md += "## " + text + "\n\n";
    html += "<h2>" + analysis::xml_escape(text) + "</h2>\n";
  }
  void paragraph(const std::string& text) {
    md += text + "\n\n";
    html += "<p>" + analysis::xml_escape(text) + "</p>\n";
  }
  void bullets(const std::vector<std::string>& items) {
    html += "<ul>\n";
    for (const std::string& item : items) {
      md += "- " + item + "\n";
      html += "<li>" + analysis::xml_escape(item) + "</li>\n";
    }
    md += "\n";
    html += "</ul>\n";
  }
  void table(const analysis::TextTable& t) {
    md += analysis::render_markdown_table(t) + "\n";
    html += analysis::render_html_table(t) + "\n";
  }
};

const analysis::MetricAnalysis* find_metric(const analysis::StudyAnalysis& a, Metric metric) {
  for (const auto& m : a.metrics) {
    if (m.metric == metric) return &m;
  }
  return nullptr;
}

// "w4a16 wins median TPOT up to concurrency 4 (...); w8a8-fp8 from 16 (...)".
std::string describe_metric(const analysis::StudyAnalysis& a, Metric metric) {
  const analysis::MetricAnalysis* m = find_metric(a, metric);
  const std::string name(analysis::metric_name(metric));
  const std::string unit(analysis::metric_unit(metric));
  if (!m || m->winners.empty()) return name + ": not enough cells to compare.";
  std::string text;
  if (m->crossovers.empty()) {
    // Levels with a clear winner, and the tied ones named apart: a tie's best value belongs to
    // whichever precision was ahead there, not necessarily to the overall winner.
    std::vector<const analysis::LevelWinner*> clear;
    std::vector<std::string> ties, unseparated;
    for (const auto& w : m->winners) {
      if (w.not_separable) {
        unseparated.push_back(fmt::format("{:g}", w.concurrency));
      } else if (w.tie) {  // named: a tie between two ways of serving one weight precision is a finding
        const std::string names = analysis::tied_names(w);
        ties.push_back(fmt::format("{:g}{}", w.concurrency, names.empty() ? "" : " (" + names + ")"));
      } else {
        clear.push_back(&w);
      }
    }
    if (clear.empty()) {
      if (unseparated.empty())
        return fmt::format("{}: a tie (within 2 %) at every measured concurrency: {}.", name, fmt::join(ties, ", "));
      std::string levels_text;
      for (const auto& w : m->winners) levels_text += " " + analysis::describe_level(w, metric) + ";";
      levels_text.back() = '.';
      return name + ": no precision is clearly ahead at any measured concurrency:" + levels_text;
    }
    const std::string& winner = clear.front()->winner;
    for (const auto* w : clear) {
      if (w->winner != winner) {  // different winners with ties between them: list each level
        text = name + ":";
        for (const auto& l : m->winners) text += " " + analysis::describe_level(l, metric) + ";";
        text.back() = '.';
        return text;
      }
    }
    const auto& first = *clear.front();
    const auto& last = *clear.back();
    auto pair_text = [&](const analysis::LevelWinner& w) {
      return fmt::format("{} vs {} {} at {:g}{}", analysis::format_with_interval(w.best_value, w.best_interval, 2),
                         analysis::format_with_interval(w.runner_up_value, w.runner_up_interval, 2), unit,
                         w.concurrency, w.interfered ? ", measured under interference" : "");
    };
    text = fmt::format("{}: {} wins at every measured concurrency where one precision is ahead ({}", name, winner,
                       pair_text(first));
    if (&first != &last) text += ", " + pair_text(last);
    text += ")";
    if (!ties.empty()) text += fmt::format("; a tie (within 2 %) at {}", fmt::join(ties, ", "));
    if (!unseparated.empty())
      text += fmt::format("; not separable at this sample size at {}", fmt::join(unseparated, ", "));
    return text +
           fmt::format("; no crossover in {:g}..{:g}.", m->winners.front().concurrency, m->winners.back().concurrency);
  }
  auto level_at = [&](double concurrency) -> const analysis::LevelWinner* {
    for (const auto& w : m->winners) {
      if (w.concurrency == concurrency) return &w;
    }
    return nullptr;
  };
  auto evidence = [&](double concurrency) {
    const analysis::LevelWinner* w = level_at(concurrency);
    if (w == nullptr) return std::string();
    return fmt::format(" ({} vs {} {}{})", analysis::format_with_interval(w->best_value, w->best_interval, 2),
                       analysis::format_with_interval(w->runner_up_value, w->runner_up_interval, 2), unit,
                       w->interfered ? ", measured under interference" : "");
  };
  text = name + ": ";
  for (size_t i = 0; i < m->crossovers.size(); ++i) {
    const auto& c = m->crossovers[i];
    text += fmt::format("{}{} wins up to concurrency {:g}{}, {} from {:g}{}", i ? "; then " : "", c.winner_below,
                        c.concurrency_below, evidence(c.concurrency_below), c.winner_above, c.concurrency_above,
                        evidence(c.concurrency_above));
  }
  std::vector<std::string> unseparated;
  for (const auto& w : m->winners) {
    if (w.not_separable) unseparated.push_back(fmt::format("{:g}", w.concurrency));
  }
  text += " (the flip lies between those two levels, both separable)";
  if (!unseparated.empty())
    text += fmt::format("; not separable at this sample size at {}", fmt::join(unseparated, ", "));
  return text + ".";
}

// What the sample could decide within the time budget, from budget.json.
std::string sample_sentence(const nlohmann::json& budget) {
  const double time_budget = budget.value("time_budget_s", 0.0);
  const double measure = budget.value("measure_s", 0.0);
  const int extra = budget.value("extra_runs", 0);
  std::vector<std::string> undecided;
  if (budget.contains("undecided") && budget["undecided"].is_array()) {
    for (const auto& u : budget["undecided"]) {
      if (!u.is_object()) continue;
      undecided.push_back(fmt::format("{} at {:g} ({} vs {})", u.value("metric", std::string("?")),
                                      u.value("concurrency", 0.0), u.value("leader", std::string("?")),
                                      u.value("runner_up", std::string("?"))));
    }
  }
  std::string text =
      time_budget > 0
          ? fmt::format(
                "Sample size — measuring took {:.0f} s of a {:.0f} s time budget, {} extra run(s) added to "
                "cells whose intervals overlapped",
                measure, time_budget, extra)
          : fmt::format("Sample size — measuring took {:.0f} s; no time budget for extra runs (--time-budget)",
                        measure);
  if (undecided.empty()) return text + "; every compared level of median TPOT and output throughput is decided.";
  std::string why = "nothing was added to decide";
  if (budget.value("runs_capped", false)) {
    why = fmt::format("their cells reached --max-runs-per-cell ({} runs) before the intervals separated",
                      budget.value("max_runs_per_cell", 0));
  } else if (time_budget > 0) {
    why = "the budget was too small to decide";
  }
  return text + fmt::format("; {}: not separable at this sample size: {}.", why, fmt::join(undecided, "; "));
}

void add_recommendation(Fragments& f, const SweepOptions& o, const analysis::StudyResults& study,
                        const analysis::StudyAnalysis& a, const std::vector<QualityResult>& qualities,
                        const std::vector<std::pair<std::string, ServerStartup>>& startups, bool harness_scored) {
  f.heading("Recommendation");
  std::vector<std::string> items;
  items.push_back("Latency — " + describe_metric(a, Metric::kMedianTpot));
  items.push_back("Tail latency — " + describe_metric(a, Metric::kP99Tpot));
  items.push_back("Throughput — " + describe_metric(a, Metric::kOutputThroughput));
  if (o.slo_ttft_ms || o.slo_tpot_ms) {  // the capacity under --slo (analysis/slo.h), in a sentence
    const std::string slo_text = analysis::describe_slo(a.slo.slo);
    std::string per_precision;
    for (const analysis::SloCapacity& c : a.slo.capacity) {
      per_precision += fmt::format("{}{}: {}", per_precision.empty() ? "" : ", ", c.label,
                                   c.max_concurrency ? fmt::format("up to {:g}", *c.max_concurrency) : "never");
    }
    if (a.slo.most_load.empty()) {
      items.push_back("SLO (" + slo_text + "): no precision met it at any measured concurrency (" + per_precision +
                      ").");
    } else {
      items.push_back(fmt::format(
          "SLO ({}): serve {} — it meets the SLO up to concurrency {:g}, the highest of the precisions ({}).", slo_text,
          fmt::join(a.slo.most_load, " or "), *a.slo.most_load_concurrency, per_precision));
    }
  }
  for (const QualityResult& q : qualities) {
    const double delta = q.perplexity_change_pct().value_or(0);
    items.push_back(fmt::format(
        "Quality — {}: perplexity {:.3f} vs {:.3f} for fp16 ({:+.2f} %), greedy agreement with "
        "fp16 {:.1f} %{} over {} tokens.",
        q.precision, q.perplexity, q.reference_perplexity, delta, 100.0 * q.greedy_agreement,
        q.mean_kl_divergence ? fmt::format(", mean KL divergence from fp16 {:.5f} nats", *q.mean_kl_divergence) : "",
        q.num_predicted_tokens));
  }
  for (const auto& [precision, s] : startups) {
    if (s.weights_gib && s.kv_cache_tokens) {
      items.push_back(fmt::format("Memory — {}: weights {:.3f} GiB; KV cache {} tokens.", precision, *s.weights_gib,
                                  fixed(s.kv_cache_tokens, 0)));
    }
  }
  if (auto budget = read_json(o.out_dir + "/budget.json"); budget && budget->is_object()) {
    items.push_back(sample_sentence(*budget));
  }
  size_t interfered = 0;
  for (const CellMeasurement& cell : study.cells) interfered += cell.interfered ? 1 : 0;
  if (interfered > 0) {
    items.push_back(
        fmt::format("Busy machine — {} of {} cells were measured while other work used the machine (see Measurement "
                    "quality); every comparison resting on one says so.",
                    interfered, study.cells.size()));
  }
  f.bullets(items);
  // The sentence people read: which precision below and above the crossover.
  const analysis::MetricAnalysis* tpot = find_metric(a, Metric::kMedianTpot);
  const std::string quality_note =
      !qualities.empty() || harness_scored
          ? "with the quality costs listed above"
          : "quality was not measured in this sweep (--eval-samples 0, no --harness-results)";
  if (tpot && !tpot->crossovers.empty()) {
    // Every flip in order: "up to 3 serve A; from 10 serve B; from 100 serve C".
    const auto& first = tpot->crossovers.front();
    std::string plan = fmt::format("up to concurrency {:g} serve {}", first.concurrency_below, first.winner_below);
    for (const auto& c : tpot->crossovers)
      plan += fmt::format("; from {:g} up serve {}", c.concurrency_above, c.winner_above);
    f.paragraph(fmt::format("In short, for the lowest median TPOT: {} (each flip lies between the two levels named) — "
                            "measured on {}; {}.",
                            plan, a.hardware.name, quality_note) +
                (interfered > 0 ? " Some cells were measured on a busy machine: see Measurement quality." : ""));
  } else if (tpot && !tpot->winners.empty()) {
    std::string winner;
    for (const auto& w : tpot->winners) {
      if (!w.tie) winner = w.winner;
    }
    std::vector<std::string> unseparated;
    for (const auto& w : tpot->winners) {
      if (w.not_separable) unseparated.push_back(fmt::format("{:g}", w.concurrency));
    }
    if (!winner.empty()) {
      f.paragraph(fmt::format("In short: over the measured range ({:g}..{:g}) {} gives the lowest median TPOT{}; weigh "
                              "that against its quality cost above.",
                              tpot->winners.front().concurrency, tpot->winners.back().concurrency, winner,
                              unseparated.empty()
                                  ? std::string()
                                  : fmt::format(" where a precision is separably ahead (at {} this sample "
                                                "cannot tell them apart)",
                                                fmt::join(unseparated, ", "))) +
                  (interfered > 0 ? " Some cells were measured on a busy machine: see Measurement quality." : ""));
    } else {
      std::map<std::string, double> weights_gib;
      for (const auto& [precision, s] : startups) {
        if (s.weights_gib) weights_gib[precision] = *s.weights_gib;
      }
      const SpeedTieChoice tie = choose_on_a_speed_tie(tpot->winners, qualities, weights_gib);
      f.paragraph(speed_tie_sentence(tie, std::string(analysis::metric_name(Metric::kMedianTpot))) +
                  (interfered > 0 ? " Some cells were measured on a busy machine: see Measurement quality." : ""));
    }
  }
}

void add_quality_and_startup(Fragments& f, const analysis::StudyResults& study,
                             const std::vector<std::pair<std::string, ServerStartup>>& startups,
                             const std::vector<QualityResult>& qualities,
                             const std::vector<std::pair<std::string, std::vector<HarnessScore>>>& harness) {
  f.heading("Cold start and capacity (from each server's start-up log)");
  analysis::TextTable t;
  t.header = {"precision", "load s",           "start-up s",        "weights GiB",       "KV GiB",
              "KV tokens", "worst-case conc.", "workload capacity", "peak running batch"};
  t.right_align = {false, true, true, true, true, true, true, true, true};
  for (const auto& [precision, s] : startups) {
    std::optional<double> peak;
    for (const CellMeasurement& cell : study.cells) {
      if (cell.precision == precision && cell.peak_running_batch)
        peak = std::max(peak.value_or(0), *cell.peak_running_batch);
    }
    t.rows.push_back({precision, fixed(s.load_s, 2), fixed(s.startup_s, 2), fixed(s.weights_gib, 3),
                      fixed(s.kv_cache_gib, 3), fixed(s.kv_cache_tokens, 0), fixed(s.worst_case_concurrency, 2),
                      fixed(s.workload_concurrency, 0), fixed(peak, 0)});
  }
  f.table(t);
  if (!qualities.empty()) {
    f.heading("Quality against FP16 (crosspoint eval)");
    analysis::TextTable q;
    q.header = {"precision",        "perplexity",         "fp16 perplexity", "Δ perplexity",
                "greedy agreement", "mean KLD from fp16", "tokens"};
    q.right_align = {false, true, true, true, true, true, true};
    for (const QualityResult& r : qualities) {
      const double delta = r.perplexity_change_pct().value_or(0);
      q.rows.push_back({r.precision, fmt::format("{:.3f}", r.perplexity), fmt::format("{:.3f}", r.reference_perplexity),
                        fmt::format("{:+.2f} %", delta), fmt::format("{:.1f} %", 100.0 * r.greedy_agreement),
                        r.mean_kl_divergence ? fmt::format("{:.5f}", *r.mean_kl_divergence) : "-",
                        std::to_string(r.num_predicted_tokens)});
    }
    f.table(q);
  }
  if (!harness.empty()) {
    f.heading("Quality from lm-evaluation-harness (--harness-results)");
    f.table(harness_quality_table(harness));
  }
}

// What the fp8 KV cache and prefix caching changed (axis_effects), when the sweep made either
// an axis.
void add_axis_effects(Fragments& f, const SweepOptions& o, const analysis::StudyResults& study,
                      const std::vector<std::pair<std::string, ServerStartup>>& startups,
                      const std::vector<QualityResult>& qualities) {
  AxisEffectsInputs in;
  in.labels = o.precisions;
  in.cells = study.cells;
  for (const auto& [label, s] : startups) {
    if (s.kv_cache_tokens) in.kv_cache_tokens[label] = *s.kv_cache_tokens;
  }
  for (const QualityResult& q : qualities) {
    if (const auto delta = q.perplexity_change_pct()) in.perplexity_delta_pct[q.precision] = *delta;
  }
  const AxisEffects effects = axis_effects(in);
  if (effects.empty()) return;
  f.heading("What the KV cache's precision and prefix caching changed");
  f.paragraph(
      "Each pair below is the same weights served two ways in this sweep, at the concurrencies both were measured "
      "at (before → after, change in %).");
  for (const AxisEffectPart& part : effects.parts) {
    f.paragraph(part.title + "." + (part.facts.empty() ? "" : " " + fmt::format("{}", fmt::join(part.facts, " "))));
    if (!part.table.rows.empty()) f.table(part.table);
  }
  if (!effects.crossover_lines.empty()) {
    f.paragraph("Where the weight precisions cross over, for each way of serving them:");
    f.bullets(effects.crossover_lines);
  }
}

// Inserts the fragment before the first section heading after the findings (or at the end).
void insert_before(std::string& document, const std::string& marker, const std::string& fragment) {
  const size_t at = document.find(marker);
  document.insert(at == std::string::npos ? document.size() : at, fragment);
}

}  // namespace

std::string ceilings_provenance(const std::string& hw_name, const std::string& source) {
  // "measured by crosspoint hwinfo on NVIDIA H200 at 2026-11-30 04:50 UTC: <method>" -> the part before the method.
  const std::string gpu_prefix = "measured by crosspoint hwinfo";
  if (source.rfind(gpu_prefix, 0) == 0) return source.substr(0, source.find(": "));
  if (source.rfind("measured: ", 0) == 0 && hw_name.rfind("cpu", 0) == 0) {
    return "measured by crosspoint hwinfo on " + hw_name;  // the CPU measurement names no date
  }
  if (source.empty()) return "of " + hw_name;
  const size_t cut = source.find(" (");
  return "from " + (cut == std::string::npos ? source : source.substr(0, cut));
}

Result<nlohmann::json> build_study_json(const SweepOptions& o, const std::string& fp16_dir,
                                        const std::vector<int>& levels) {
  nlohmann::json study = nlohmann::json::object();
  // The model's own name where its config.json keeps one (transformers' _name_or_path: a hub id
  // or a path; the last component), else the folder's name.
  std::string model_name = fs::path(fp16_dir).filename().string();
  if (auto config = read_json(fp16_dir + "/config.json");
      config && config->is_object() && config->contains("_name_or_path") && (*config)["_name_or_path"].is_string()) {
    const std::string named = fs::path((*config)["_name_or_path"].get<std::string>()).filename().string();
    if (!named.empty()) model_name = named;
  }
  auto hw = read_json(o.out_dir + "/hwinfo.json");
  // hwinfo.json is `crosspoint hwinfo --json` output (the name under "ceilings") or a bare ceilings object.
  std::string hw_name = o.device == "cuda" ? "cuda" : "cpu";
  std::string hw_source;
  if (hw && hw->is_object()) {
    const nlohmann::json& c = hw->contains("ceilings") ? (*hw)["ceilings"] : *hw;
    if (c.is_object() && c.contains("name") && c["name"].is_string()) hw_name = c["name"].get<std::string>();
    if (c.is_object() && c.contains("source") && c["source"].is_string()) hw_source = c["source"].get<std::string>();
  }
  const Engine engine = engine_of(o.engine, o.serve_cmd);
  study["title"] = "crosspoint sweep: " + model_name + " on " + hw_name +
                   (engine == Engine::kCrosspoint ? "" : ", served by " + engine_display_name(engine)) +
                   (o.memory_budget.empty() ? "" : ", memory budget " + o.memory_budget);
  study["engine"] = engine_display_name(engine);
  if (!o.memory_budget.empty()) study["memory_budget"] = o.memory_budget;
  if (o.max_num_seqs > 0) study["max_num_seqs"] = o.max_num_seqs;
  std::string prompts = std::to_string(o.num_prompts);
  if (!o.num_prompts_by_level.empty()) {
    prompts.clear();
    for (const auto& [level, count] : o.num_prompts_by_level) {
      prompts += fmt::format("{}{} (concurrency {})", prompts.empty() ? "" : ", ", count, level);
    }
  }
  study["model"] = {{"name", model_name}};
  study["max_model_len"] = o.max_model_len;
  nlohmann::json precisions = nlohmann::json::array();
  nlohmann::json cells = nlohmann::json::array();
  double input_sum = 0, output_sum = 0, num_requests = 0;
  for (const std::string& p : o.precisions) {
    nlohmann::json setup = {{"label", p}, {"precision", weight_precision_of(p)}};
    // The roofline's KV bytes: e4m3 for an fp8 cache, else the device's own (analysis options).
    if (kv_cache_dtype_of(p) == "fp8") setup["kv_bytes_per_element"] = 1;
    // Ranks on their own devices: the roofline is one rank's and throughput counts per device. A
    // CPU split's ranks share one memory and its cores, so it stays one device's whole model.
    if (tensor_parallel_size_of(p) > 1 && o.device == "cuda")
      setup["tensor_parallel_size"] = tensor_parallel_size_of(p);
    if (auto s = read_json(o.out_dir + "/servers/" + p + ".json")) {
      const ServerStartup startup = server_startup_from_json(*s);
      if (startup.weights_gib) setup["weights_gib"] = *startup.weights_gib;
      if (startup.kv_cache_tokens) setup["kv_cache_tokens"] = *startup.kv_cache_tokens;
      if (startup.kv_cache_gib) setup["kv_cache_gib"] = *startup.kv_cache_gib;
      if (startup.startup_s) setup["engine_init_s"] = *startup.startup_s;
    }
    precisions.push_back(setup);
    for (int level : levels) {
      for (const std::string& path : cell_run_paths(o.out_dir, p, level)) {
        auto cell = read_json(path);
        if (!cell) continue;
        if (!cell->is_object()) return corrupt(path + ": not a JSON object");
        (*cell)["precision"] = p;
        const bool has_lens = cell->contains("input_lens") && (*cell)["input_lens"].is_array();
        for (const char* key : {"input_lens", "output_lens"}) {
          if (!cell->contains(key) || !(*cell)[key].is_array()) continue;
          for (const auto& v : (*cell)[key]) {
            if (!v.is_number()) continue;
            (key[0] == 'i' ? input_sum : output_sum) += v.get<double>();
            if (key[0] == 'i') num_requests += 1;
          }
        }
        // A cell without per-request lists (rebuilt from a summary) still has the bench's totals.
        if (!has_lens && cell->value("completed", 0.0) > 0 && cell->contains("total_input_tokens") &&
            (*cell)["total_input_tokens"].is_number() && cell->contains("total_output_tokens") &&
            (*cell)["total_output_tokens"].is_number()) {
          input_sum += (*cell)["total_input_tokens"].get<double>();
          output_sum += (*cell)["total_output_tokens"].get<double>();
          num_requests += cell->value("completed", 0.0);
        }
        cells.push_back(std::move(*cell));
      }
    }
  }
  if (num_requests > 0) {
    study["workload"] = {{"mean_input_tokens", input_sum / num_requests},
                         {"mean_output_tokens", output_sum / num_requests}};
  }
  // When the cells were measured (a resumed sweep spans several runs), beside when the report was written.
  study["source"] =
      fmt::format("crosspoint sweep on {}, {}report {}: {} prompts per cell from {}{}{}, greedy, {}; ceilings {}",
                  o.device == "cuda" ? "cuda" : "cpu", measured_span(cells), utc_now("%Y-%m-%d %H:%M UTC"), prompts,
                  o.dataset, o.output_len > 0 ? fmt::format(", {} output tokens each", o.output_len) : "",
                  o.ignore_eos ? ", ignoring EOS" : "", determinism_mode(o), ceilings_provenance(hw_name, hw_source));
  study["deterministic"] = o.deterministic;
  study["precisions"] = std::move(precisions);
  study["cells"] = std::move(cells);
  return study;
}

std::optional<analysis::ServiceLevelObjective> slo_of(const SweepOptions& o) {
  if (!o.slo_ttft_ms && !o.slo_tpot_ms) return std::nullopt;
  analysis::ServiceLevelObjective slo;
  slo.ttft_ms = o.slo_ttft_ms;
  slo.tpot_ms = o.slo_tpot_ms;
  return slo;
}

std::string determinism_mode(const SweepOptions& o) {
  // Only crosspoint's own server makes these promises; another engine's are its own.
  if (engine_of(o.engine, o.serve_cmd) != Engine::kCrosspoint)
    return "the " + engine_display_name(engine_of(o.engine, o.serve_cmd)) + " servers' own determinism";
  if (o.device != "cuda") return "servers bit-reproducible and batch-invariant (cpu)";
  return o.deterministic ? "batch-invariant servers (--deterministic)"
                         : "servers bit-reproducible run to run, not batch-invariant (no --deterministic)";
}

SweepSections render_sweep_sections(const SweepOptions& o, const analysis::StudyResults& original,
                                    const analysis::StudyAnalysis& a,
                                    const std::vector<std::pair<std::string, ServerStartup>>& startups,
                                    const std::vector<QualityResult>& qualities,
                                    const std::vector<std::pair<std::string, std::vector<HarnessScore>>>& harness) {
  // Repeated runs merged (the analysis' cells), so a cell counts once.
  analysis::StudyResults merged = original;
  if (!a.cells.empty()) merged.cells = a.cells;
  const analysis::StudyResults& study = merged;
  Fragments f;
  add_recommendation(f, o, study, a, qualities, startups, !harness.empty());
  add_quality_and_startup(f, study, startups, qualities, harness);
  add_axis_effects(f, o, study, startups, qualities);
  return {f.md, f.html};
}

Status write_sweep_report(const SweepOptions& o, const std::string& fp16_dir, const nlohmann::json& study_json) {
  const std::string source = o.out_dir + "/study.json";
  CROSSPOINT_ASSIGN_OR_RETURN(analysis::StudyResults study, analysis::parse_study_results(study_json.dump(), source));
  analysis::AnalysisOptions options;
  CROSSPOINT_ASSIGN_OR_RETURN(options.hardware, analysis::load_ceilings(o.out_dir + "/hwinfo.json"));
  CROSSPOINT_ASSIGN_OR_RETURN(options.model_shape, analysis::load_model_shape(fp16_dir + "/config.json"));
  // crosspoint serve keeps the KV cache in f32 on the CPU and in fp16 on the GPU.
  options.kv_bytes_per_element = o.device == "cuda" ? 2 : 4;
  options.bisection_resolution = o.bisect_resolution;
  options.kv_block_size = 16;  // crosspoint serve's --block-size default
  options.slo = slo_of(o);
  CROSSPOINT_ASSIGN_OR_RETURN(analysis::StudyAnalysis result, analysis::analyze_study(study, options));

  std::vector<std::pair<std::string, ServerStartup>> startups;
  std::vector<QualityResult> qualities;
  std::set<std::string> quality_labels;
  for (const std::string& p : o.precisions) {
    if (auto s = read_json(o.out_dir + "/servers/" + p + ".json"))
      startups.emplace_back(p, server_startup_from_json(*s));
    if (!quality_labels.insert(quality_label_of(p)).second) continue;  // one row per weights and KV cache
    auto q = read_json(o.out_dir + "/quality/" + quality_label_of(p) + ".json");
    if (!q || !q->is_object()) continue;
    QualityResult r;
    r.precision = quality_label_of(p);
    r.perplexity = q->value("perplexity", 0.0);
    r.reference_perplexity = q->value("reference_perplexity", 0.0);
    r.greedy_agreement = q->value("greedy_agreement", 0.0);
    if (q->contains("mean_kl_divergence") && (*q)["mean_kl_divergence"].is_number())
      r.mean_kl_divergence = (*q)["mean_kl_divergence"].get<double>();
    r.num_predicted_tokens = q->value("num_predicted_tokens", int64_t{0});
    qualities.push_back(r);
  }
  std::vector<std::pair<std::string, std::vector<HarnessScore>>> harness;
  for (const std::string& p : o.precisions) {
    const std::string path = harness_results_path(o.out_dir, p);
    auto file = read_json(path);
    if (!file) continue;
    CROSSPOINT_ASSIGN_OR_RETURN(std::vector<HarnessScore> scores, harness_scores_from_json(*file, path));
    harness.emplace_back(p, std::move(scores));
  }
  analysis::ReportExtras extras;
  for (const QualityResult& q : qualities) {
    if (const auto delta = q.perplexity_change_pct())
      extras.quality.push_back({q.precision, *delta, q.greedy_agreement});
  }
  analysis::ReportFiles files = analysis::render_study_report(study, result, extras);
  const SweepSections sections = render_sweep_sections(o, study, result, startups, qualities, harness);
  insert_before(files.markdown, "## Latency", sections.markdown);
  if (const auto lines = engine_report_lines(engine_of(o.engine, o.serve_cmd), o.precisions, o.gguf); !lines.empty()) {
    std::string md = "## Engine\n\n", html = "<h2>Engine</h2>\n";
    for (const std::string& line : lines) {
      md += line + "\n\n";
      html += "<p>" + line + "</p>\n";
    }
    insert_before(files.markdown, "## Latency", md);
    insert_before(files.html, "<h2>Latency", html);
  }
  insert_before(files.html, "<h2>Latency", sections.html);
  if (files.html.find(sections.html) == std::string::npos) insert_before(files.html, "</body>", sections.html);
  CROSSPOINT_RETURN_IF_ERROR(analysis::write_report(o.out_dir, files));
  // The analysis as JSON: winners with their intervals, every cell's intervals and guard records.
  nlohmann::json analysis_json = analysis::study_analysis_to_json(result);
  if (auto budget = read_json(o.out_dir + "/budget.json")) analysis_json["sample"] = *budget;
  std::ofstream out(o.out_dir + "/analysis.json", std::ios::binary | std::ios::trunc);
  out << analysis_json.dump(2);
  if (!out) return io_error(o.out_dir + "/analysis.json: cannot write");
  return Status::ok();
}

}  // namespace crosspoint::sweep
