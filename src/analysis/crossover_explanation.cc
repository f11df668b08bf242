#include "analysis/crossover_explanation.h"

#include <fmt/format.h>

#include <cmath>
#include <optional>

namespace crosspoint::analysis {

namespace {

// A cell's roofline row and its measurement (analysis.roofline follows analysis.cells).
struct Side {
  const RooflineCell* roof = nullptr;
  const CellMeasurement* cell = nullptr;
};

std::optional<Side> find_side(const StudyAnalysis& analysis, const std::string& precision, double concurrency) {
  for (size_t i = 0; i < analysis.roofline.size() && i < analysis.cells.size(); ++i) {
    const RooflineCell& roof = analysis.roofline[i];
    if (roof.precision == precision && roof.concurrency == concurrency && roof.measured_tpot_ms > 0)
      return Side{&roof, &analysis.cells[i]};
  }
  return std::nullopt;
}

std::string regime(const RooflineCell& c) { return c.compute_bound ? "compute-bound" : "memory-bound"; }

// What the roofline says at one level, and whether it predicts the measured winner there.
std::string level_reason(const std::string& winner, const Side& w, const std::string& other, const Side& o,
                         double concurrency) {
  const RooflineCell& a = *w.roof;
  const RooflineCell& b = *o.roof;
  std::string text = fmt::format(
      "At concurrency {:g} (batch {:.1f} and {:.1f}): {} reads {:.2f} GB per step and {} {:.2f} GB; arithmetic "
      "intensity {:.0f} and {:.0f} FLOP/byte against critical intensities of {:.0f} and {:.0f}, so {} is {} and "
      "{} {}. The roofline puts a step at {:.2f} ms and {:.2f} ms; median TPOT measured {:.2f} and {:.2f} ms.",
      concurrency, a.batch, b.batch, winner, a.bytes_per_step / 1e9, other, b.bytes_per_step / 1e9,
      a.arithmetic_intensity, b.arithmetic_intensity, a.critical_intensity, b.critical_intensity, winner, regime(a),
      other, regime(b), a.bound_tpot_ms, b.bound_tpot_ms, a.measured_tpot_ms, b.measured_tpot_ms);
  if (a.bound_tpot_ms < b.bound_tpot_ms) {
    if (!a.compute_bound && !b.compute_bound) {
      text += fmt::format(" The roofline predicts {} ahead: fewer bytes to read.", winner);
    } else if (b.compute_bound && a.peak_tflops > b.peak_tflops) {
      text += fmt::format(" The roofline predicts {} ahead: faster math ({:.0f} against {:.0f} TFLOP/s).", winner,
                          a.peak_tflops, b.peak_tflops);
    } else {
      text += fmt::format(" The roofline predicts {} ahead.", winner);
    }
  } else {
    text += fmt::format(
        " The roofline alone ranks {} first: the order comes from time outside it, {:+.2f} ms per step beyond the "
        "bound for {} and {:+.2f} ms for {} (dequantisation, attention and other kernels, launches, scheduling).",
        other, a.overhead_ms, winner, b.overhead_ms, other);
  }
  return text;
}

// Attention's KV reads are the same bytes for every precision of the weights: they dilute
// the weights' saving as batch x context grows.
std::optional<std::string> attention_reason(const std::string& p, const Side& x, const std::string& q, const Side& y,
                                            double concurrency) {
  const RooflineCell& a = *x.roof;
  const RooflineCell& b = *y.roof;
  if (a.kv_bytes_per_step <= 0 || b.kv_bytes_per_step <= 0 || b.weight_bytes_per_step <= 0 || b.bytes_per_step <= 0)
    return std::nullopt;
  return fmt::format(
      "Attention's share at concurrency {:g}: the KV reads are {:.0f} % of {}'s bytes per step and {:.0f} % of {}'s "
      "({:.0f} and {:.0f} tokens of context per sequence{}); {}'s weights are {:.2f}x {}'s, its whole step's bytes "
      "{:.2f}x.",
      concurrency, 100 * a.kv_bytes_per_step / a.bytes_per_step, p, 100 * b.kv_bytes_per_step / b.bytes_per_step, q,
      a.mean_context_tokens, b.mean_context_tokens,
      x.cell->context_from_kv_usage || y.cell->context_from_kv_usage ? ", estimated from the KV cache's usage" : "", p,
      a.weight_bytes_per_step / b.weight_bytes_per_step, q, a.bytes_per_step / b.bytes_per_step);
}

// Throughput is batch / step time: which of the two gave the winner its lead.
std::optional<std::string> throughput_reason(const std::string& winner, const Side& w, const std::string& other,
                                             const Side& o, double concurrency) {
  if (!w.cell->output_throughput_tok_s || !o.cell->output_throughput_tok_s) return std::nullopt;
  const double batch_ratio = w.roof->batch / o.roof->batch;
  const double speed_ratio = o.roof->measured_tpot_ms / w.roof->measured_tpot_ms;
  // What gave the winner its lead: the factor in its favour.
  std::string decided;
  if (batch_ratio > 1 && speed_ratio > 1) {
    decided = "the larger batch and the shorter step both favour it.";
  } else if (batch_ratio > 1) {
    decided = "the larger batch decides (its steps are slower).";
  } else if (speed_ratio > 1) {
    decided = "the shorter step decides (its batch is smaller).";
  } else {
    decided = "neither its mean batch nor its median step is ahead: the lead comes from the run's ramp and drain.";
  }
  return fmt::format(
      "Throughput at concurrency {:g} is batch over step time: {} made {:.0f} tok/s with a mean batch of {:.1f} at "
      "{:.2f} ms per token, {} {:.0f} tok/s with {:.1f} at {:.2f} ms. Batch ratio {:.2f}x, speed ratio {:.2f}x: "
      "{}",
      concurrency, winner, *w.cell->output_throughput_tok_s, w.roof->batch, w.roof->measured_tpot_ms, other,
      *o.cell->output_throughput_tok_s, o.roof->batch, o.roof->measured_tpot_ms, batch_ratio, speed_ratio, decided);
}

std::optional<std::string> tail_reason(const std::string& p, const Side& x, const std::string& q, const Side& y,
                                       double concurrency) {
  if (!x.cell->p99_tpot_ms || !y.cell->p99_tpot_ms) return std::nullopt;
  return fmt::format(
      "The tail at concurrency {:g}: p99 TPOT is {:.1f}x the median for {} ({:.2f} ms) and {:.1f}x for {} ({:.2f} "
      "ms); the roofline above describes the median step, not the slowest steps a request meets.",
      concurrency, *x.cell->p99_tpot_ms / x.roof->measured_tpot_ms, p, *x.cell->p99_tpot_ms,
      *y.cell->p99_tpot_ms / y.roof->measured_tpot_ms, q, *y.cell->p99_tpot_ms);
}

std::string usage_text(const CellMeasurement& cell) {
  return cell.max_kv_cache_usage ? fmt::format("{:.0f} %", 100 * *cell.max_kv_cache_usage) : "not sampled";
}

bool kv_bound(const CellMeasurement& cell) {
  return cell.num_preemptions.value_or(0) > 0 || cell.max_kv_cache_usage.value_or(0) >= 0.95;
}

std::string capacity_reason(const std::string& p, const Side& x, const std::string& q, const Side& y,
                            double concurrency) {
  const bool px = kv_bound(*x.cell), qy = kv_bound(*y.cell);
  if (!px && !qy) {
    return fmt::format(
        "KV capacity at concurrency {:g} did not bind: peak usage {} for {} and {} for {}, no preemption; the batch "
        "was set by the client's concurrency and the scheduler, not by memory.",
        concurrency, usage_text(*x.cell), p, usage_text(*y.cell), q);
  }
  std::string text = fmt::format("KV capacity at concurrency {:g} bound ", concurrency);
  auto one = [](const std::string& name, const CellMeasurement& cell) {
    return fmt::format("{}'s batch (peak usage {}, {} preemptions)", name, usage_text(cell),
                       cell.num_preemptions.value_or(0));
  };
  if (px && qy) text += one(p, *x.cell) + " and " + one(q, *y.cell);
  else if (px) text += one(p, *x.cell) + fmt::format(", not {}'s (peak usage {})", q, usage_text(*y.cell));
  else text += one(q, *y.cell) + fmt::format(", not {}'s (peak usage {})", p, usage_text(*x.cell));
  return text + ".";
}

}  // namespace

std::vector<CrossoverExplanation> explain_crossovers(const StudyAnalysis& analysis) {
  std::vector<CrossoverExplanation> out;
  for (Metric metric : {Metric::kMedianTpot, Metric::kP99Tpot, Metric::kOutputThroughput}) {
    for (const MetricAnalysis& entry : analysis.metrics) {
      if (entry.metric != metric) continue;
      for (const Crossover& crossover : entry.crossovers) {
        const std::string& a = crossover.winner_below;
        const std::string& b = crossover.winner_above;
        const auto a_lo = find_side(analysis, a, crossover.concurrency_below);
        const auto b_lo = find_side(analysis, b, crossover.concurrency_below);
        const auto a_hi = find_side(analysis, a, crossover.concurrency_above);
        const auto b_hi = find_side(analysis, b, crossover.concurrency_above);
        if (!a_lo || !b_lo || !a_hi || !b_hi) continue;
        CrossoverExplanation e;
        e.crossover = crossover;
        e.where = fmt::format("{}: {} leads up to concurrency {:g}, {} from {:g}", metric_name(metric), a,
                              crossover.concurrency_below, b, crossover.concurrency_above);
        const double lo = crossover.concurrency_below, hi = crossover.concurrency_above;
        if (metric == Metric::kOutputThroughput) {
          if (auto r = throughput_reason(a, *a_lo, b, *b_lo, lo)) e.reasons.push_back(*r);
          if (auto r = throughput_reason(b, *b_hi, a, *a_hi, hi)) e.reasons.push_back(*r);
        } else {
          e.reasons.push_back(level_reason(a, *a_lo, b, *b_lo, lo));
          e.reasons.push_back(level_reason(b, *b_hi, a, *a_hi, hi));
          if (metric == Metric::kP99Tpot) {
            if (auto r = tail_reason(a, *a_hi, b, *b_hi, hi)) e.reasons.push_back(*r);
          }
        }
        if (auto r = attention_reason(a, *a_hi, b, *b_hi, hi)) e.reasons.push_back(*r);
        e.reasons.push_back(capacity_reason(a, *a_hi, b, *b_hi, hi));
        out.push_back(std::move(e));
      }
    }
  }
  return out;
}

}  // namespace crosspoint::analysis
