// The readable side of bench_decode_step's results: Markdown tables printed from its JSON
// (one table of decode cells per model, the batch-1 target, the prefill line, and the per-op
// breakdown for B=1 and B=64). Reads only the JSON, so the tables say what the file says.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "model/cuda/step_profiler.h"

namespace crosspoint::bench::decode_step {

using nlohmann::json;

inline double num(const json& j, const char* key) {
  return j.contains(key) && j[key].is_number() ? j[key].get<double>() : 0.0;
}

inline std::string ms_cell(const json& cell, const char* key) {
  if (!cell.contains(key)) return "failed";
  const json& t = cell[key];
  return fmt::format("{:.3f} ({:.3f}-{:.3f})", num(t, "median_ms"), num(t, "p10_ms"), num(t, "p90_ms"));
}

inline void print_breakdown(const json& m) {
  const json& decode = m["decode"];
  std::vector<const json*> cells;  // B=1 and B=64 when measured, else the first and last batch
  for (int32_t want : {1, 64})
    for (const json& c : decode)
      if (c["batch"].get<int32_t>() == want) cells.push_back(&c);
  if (cells.size() < 2 && decode.size() >= 2) cells = {&decode.front(), &decode.back()};
  if (cells.empty() && !decode.empty()) cells = {&decode.front()};
  std::string header = "| op |", rule = "|---|";
  for (const json* c : cells) {
    const int32_t B = (*c)["batch"].get<int32_t>();
    header += fmt::format(" B={0} eager ms | % | B={0} queued ms | % |", B);
    rule += "---:|---:|---:|---:|";
  }
  std::printf(
      "\nPer-op breakdown of one profiled eager decode step (eager: as launched; queued: stream held "
      "until the step was enqueued, GPU time per op):\n\n%s calls |\n%s---:|\n",
      header.c_str(), rule.c_str());
  for (int32_t i = 0; i < cuda::kNumStepOps; ++i) {
    const std::string name = cuda::step_op_name(static_cast<cuda::StepOp>(i));
    std::string row = "| " + name + " |";
    int64_t calls = 0;
    bool any = false;
    for (const json* c : cells) {
      for (const char* key : {"breakdown_eager", "breakdown_queued"}) {
        const json* op = nullptr;
        if (c->contains(key))
          for (const json& o : (*c)[key]["ops"])
            if (o["op"] == name) op = &o;
        if (op != nullptr) {
          any = true;
          calls = (*op)["calls"].get<int64_t>();
          row += fmt::format(" {:.3f} | {:.1f} |", num(*op, "ms"), num(*op, "pct"));
        } else {
          row += " - | - |";
        }
      }
    }
    if (any) std::printf("%s %lld |\n", row.c_str(), static_cast<long long>(calls));
  }
  std::string total = "| total |";
  for (const json* c : cells)
    for (const char* key : {"breakdown_eager", "breakdown_queued"})
      total += c->contains(key) ? fmt::format(" {:.3f} | 100 |", num((*c)[key], "total_ms")) : std::string(" - | - |");
  std::printf("%s |\n", total.c_str());
  std::string plain = "| unprofiled eager step |";
  for (const json* c : cells)
    for (const char* key : {"breakdown_eager", "breakdown_queued"})
      plain += c->contains(key) ? fmt::format(" {:.3f} | |", num((*c)[key], "unprofiled_eager_median_ms"))
                                : std::string(" - | |");
  std::printf("%s |\n", plain.c_str());
}

inline void print_model_tables(const json& m) {
  const json& mem = m["memory"];
  std::printf("\n### %s (%s): weights %.2f GiB on the GPU, peak device memory %.2f GiB, math peak %.0f TFLOP/s\n\n",
              m["weight_format"].get<std::string>().c_str(), m["model_dir"].get<std::string>().c_str(),
              num(mem, "weight_bytes") / (1 << 30), num(mem, "peak_used_bytes") / (1 << 30), num(m, "math_tflops"));
  std::printf("| B | graph ms (p10-p90) | eager ms (p10-p90) | bound ms | %% of BW | %% of roofline | tok/s |\n");
  std::printf("|---:|---:|---:|---:|---:|---:|---:|\n");
  for (const json& c : m["decode"]) {
    const json& r = c["roofline"];
    std::printf("| %d | %s | %s | %.3f | %.1f | %.1f | %.0f |\n", c["batch"].get<int32_t>(),
                ms_cell(c, "graph").c_str(), ms_cell(c, "eager").c_str(), num(r, "bound_ms"),
                num(r, "pct_of_bandwidth"), num(r, "pct_of_roofline"), num(c, "tokens_per_s"));
  }
  if (m.contains("target_at_batch_1")) {
    const json& t = m["target_at_batch_1"];
    std::printf("\nBatch 1: %.1f %% of the measured bandwidth, target %.0f %%: %s\n", num(t, "pct_of_bandwidth"),
                num(t, "target_pct"), t["met"].get<bool>() ? "met" : "NOT met");
  }
  if (m.contains("prefill")) {
    const json& p = m["prefill"];
    std::printf(
        "\nPrefill of %d tokens (one sequence, eager): %s ms, %.0f tok/s; compute bound %.3f ms = %.1f %% of "
        "compute, memory bound %.3f ms\n",
        p["tokens"].get<int32_t>(), ms_cell(p, "eager").c_str(), num(p, "tokens_per_s"),
        num(p["roofline"], "compute_bound_ms"), num(p["roofline"], "pct_of_compute"),
        num(p["roofline"], "mem_bound_ms"));
  }
  print_breakdown(m);
  std::fflush(stdout);
}

}  // namespace crosspoint::bench::decode_step
