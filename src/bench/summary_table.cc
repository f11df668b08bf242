// The console block of `vllm bench serve` (same labels, 40-column left-aligned), then the
// failures and what crosspoint adds: client overhead, reached concurrency, server figures.
#include <fmt/format.h>

#include <cmath>
#include <map>

#include "bench/bench_result.h"

namespace crosspoint::bench {

namespace {

// Failure reasons grouped with their numbers blanked ("after 3 ms" and "after 7 ms" are one
// reason); the first full message of each group is shown.
std::string reason_group(const std::string& reason) {
  std::string group;
  for (char c : reason) {
    if (c >= '0' && c <= '9') {
      if (group.empty() || group.back() != '#') group += '#';
    } else {
      group += c;
    }
  }
  return group;
}

void row(std::string& out, const std::string& label, const std::string& value) {
  out += fmt::format("{:<40} {:<10}\n", label, value);
}
std::string fixed2(double v) { return fmt::format("{:.2f}", v); }

void metric_block(std::string& out, const std::string& title, const std::string& short_name, const MetricStats& stats) {
  out += fmt::format("{:-^50}\n", title);
  row(out, "Mean " + short_name + " (ms):", fixed2(stats.mean_ms));
  row(out, "Median " + short_name + " (ms):", fixed2(stats.median_ms));
  for (const auto& [p, value] : stats.percentiles_ms) {
    row(out, "P" + percentile_key_text(p) + " " + short_name + " (ms):", fixed2(value));
  }
}

}  // namespace

std::string format_summary_table(const BenchResult& r) {
  const BenchMetrics& m = r.metrics;
  std::string out;
  out += fmt::format("{:=^50}\n", " Serving Benchmark Result ");
  row(out, "Successful requests:", std::to_string(m.completed));
  row(out, "Failed requests:", std::to_string(m.failed));
  if (r.max_concurrency) row(out, "Maximum request concurrency:", std::to_string(*r.max_concurrency));
  if (!std::isinf(r.request_rate)) row(out, "Request rate configured (RPS):", fixed2(r.request_rate));
  row(out, "Benchmark duration (s):", fixed2(r.duration_s));
  row(out, "Total input tokens:", std::to_string(m.total_input_tokens));
  row(out, "Total generated tokens:", std::to_string(m.total_output_tokens));
  row(out, "Request throughput (req/s):", fixed2(m.request_throughput));
  if (r.goodput.any()) row(out, "Request goodput (req/s):", fixed2(m.request_goodput));
  row(out, "Output token throughput (tok/s):", fixed2(m.output_throughput));
  row(out, "Peak output token throughput (tok/s):", fixed2(m.max_output_tokens_per_s));
  row(out, "Peak concurrent requests:", fixed2(m.max_concurrent_requests));
  row(out, "Total token throughput (tok/s):", fixed2(m.total_token_throughput));
  for (const std::string& name : r.percentile_metrics) {
    if (name == "ttft") metric_block(out, "Time to First Token", "TTFT", m.ttft);
    if (name == "tpot") metric_block(out, "Time per Output Token (excl. 1st token)", "TPOT", m.tpot);
    if (name == "itl") metric_block(out, "Inter-token Latency", "ITL", m.itl);
    if (name == "e2el") metric_block(out, "End-to-end Latency", "E2EL", m.e2el);
  }
  out += fmt::format("{:-^50}\n", "Dataset and client");
  row(out, "Dataset:", r.dataset.name);
  row(out, "Mean input tokens (sample):", fixed2(r.dataset.mean_input_tokens));
  row(out, "Mean output tokens (sample):", fixed2(r.dataset.mean_output_tokens));
  if (!r.turns.empty()) {
    row(out, "Conversations:", std::to_string(r.num_conversations));
    for (const TurnStats& t : r.turns) {
      row(out, fmt::format("Turn {}: requests, input tok, med TTFT ms:", t.turn_idx + 1),
          fmt::format("{} / {:.0f} / {:.2f}", t.num_requests, t.mean_input_tokens, t.median_ttft_ms));
    }
  }
  row(out, "Concurrency reached (client):", std::to_string(r.load.max_in_flight));
  row(out, "Mean concurrency (client):", fixed2(r.load.mean_in_flight));
  row(out, "Client CPU (% of one core):", fixed2(100.0 * r.load.overhead.cpu_fraction));
  row(out, "Client max dispatch lag (ms):", fixed2(r.load.overhead.max_dispatch_lag_ms));
  if (r.server.available) {
    out += fmt::format("{:-^50}\n", "Server /metrics");
    row(out, "Mean running batch:", fixed2(r.server.mean_running));
    row(out, "Max running batch:", fixed2(r.server.max_running));
    row(out, "Mean waiting requests:", fixed2(r.server.mean_waiting));
    if (r.server.mean_kv_cache_usage) row(out, "Mean KV cache usage (%):", fixed2(100 * *r.server.mean_kv_cache_usage));
    if (r.server.max_kv_cache_usage) row(out, "Max KV cache usage (%):", fixed2(100 * *r.server.max_kv_cache_usage));
    if (r.server.num_preemptions) row(out, "Preemptions:", fmt::format("{:.0f}", *r.server.num_preemptions));
    if (r.server.prefix_cache_hit_rate)
      row(out, "Prefix cache hit rate (%):", fixed2(100 * *r.server.prefix_cache_hit_rate));
  }
  if (r.gpu_energy.measured) {
    out += fmt::format("{:-^50}\n", "GPU energy (NVML, this machine's GPUs)");
    row(out, "Energy (J):", fixed2(r.gpu_energy.joules));
    row(out, "Mean power (W):", fixed2(r.gpu_energy.mean_watts));
    row(out, "Energy per request (J):", fixed2(r.gpu_energy.joules_per_request));
    row(out, "Energy per output token (mJ):", fixed2(1000 * r.gpu_energy.joules_per_output_token));
  }
  if (r.steady.valid) {
    out += fmt::format("{:-^50}\n", "Steady state (client holds every slot)");
    row(out, "Window (s):", fmt::format("{:.2f} .. {:.2f}", r.steady.start_s, r.steady.end_s));
    row(out, "Mean concurrency (client):", fixed2(r.steady.client_mean_in_flight));
    if (r.steady.server_mean_running) row(out, "Mean running batch:", fixed2(*r.steady.server_mean_running));
  } else if (r.max_concurrency) {
    row(out, "Steady state:", "none (" + r.steady.reason + ")");
  }
  if (m.failed > 0) {
    out += fmt::format("{:-^50}\n", "Failures");
    std::map<std::string, std::pair<int, std::string>> by_reason;  // group -> (count, example)
    for (const RequestRecord& rec : r.records) {
      if (rec.success) continue;
      auto& [count, example] = by_reason[reason_group(rec.error)];
      if (count++ == 0) example = rec.error;
    }
    int shown = 0;
    for (const auto& [group, entry] : by_reason) {
      const auto& [count, reason] = entry;
      if (++shown > 10) {
        out += fmt::format("... and {} more distinct reasons (see \"errors\" in the result file)\n",
                           by_reason.size() - 10);
        break;
      }
      out += fmt::format("{:>6} x {}\n", count, reason);
    }
  }
  out += std::string(50, '=') + "\n";
  return out;
}

}  // namespace crosspoint::bench
