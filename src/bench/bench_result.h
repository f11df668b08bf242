// BenchResult: everything one `bench serve` run produced, the boundary between the bench
// and its readers (result JSON, summary table, analysis). The JSON keeps vLLM's key names.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bench/gpu_energy.h"
#include "bench/load_client.h"
#include "bench/metrics.h"
#include "bench/request_record.h"
#include "bench/sample_request.h"
#include "bench/server_metrics.h"
#include "bench/steady_state.h"
#include "bench/turn_summary.h"

namespace crosspoint::bench {

struct BenchResult {
  std::string date;           // local time "YYYYmmdd-HHMMSS", as vLLM
  std::string endpoint_type;  // the backend: "openai", "vllm" (/v1/completions) or "openai-chat"
  std::string label;          // user label; empty = endpoint_type
  std::string model_id;       // --model
  std::string tokenizer_id;   // --tokenizer
  std::string base_url;
  std::string endpoint;
  int num_prompts = 0;
  std::vector<std::pair<std::string, std::string>> metadata;  // --metadata KEY=VALUE, in order
  double request_rate = 0;                                    // req/s, may be inf
  double burstiness = 1;
  std::optional<int> max_concurrency;
  std::string ramp_up_strategy;  // empty: no ramp-up
  int ramp_up_start_rps = 0;
  int ramp_up_end_rps = 0;
  std::vector<std::string> percentile_metrics;  // subset of ttft, tpot, itl, e2el
  std::vector<double> percentiles;              // e.g. 50, 90, 99
  GoodputSlos goodput;
  double duration_s = 0;
  BenchMetrics metrics;
  std::vector<RequestRecord> records;  // one per request, in dataset order
  DatasetSummary dataset;
  LoadRunResult load;  // concurrency reached, client overhead, raw /metrics samples
  ServerMetricsSummary server;
  SteadyStateWindow steady;      // with a concurrency cap: the window where the client held every slot
  int num_conversations = 0;     // multi-turn: conversations sent (num_prompts counts their requests)
  std::vector<TurnStats> turns;  // multi-turn: input tokens and TTFT by turn
  GpuEnergySummary gpu_energy;   // the local GPUs' energy over the run (--gpu-energy)
};

// vLLM's result keys (with the detailed per-request lists) followed by crosspoint's
// additions. Pretty-printed JSON text.
std::string result_to_json_text(const BenchResult& result);

// The same keys as one line of JSON, as vLLM's --save-result writes it: without detailed, the
// per-request lists vLLM drops without --save-detailed (input_lens, output_lens, start_times,
// ttfts, itls, generated_texts, errors) and crosspoint's own per-request lists are left out.
std::string result_to_json_line(const BenchResult& result, bool detailed);

// vLLM's console block, plus failures and crosspoint's additions.
std::string format_summary_table(const BenchResult& result);

}  // namespace crosspoint::bench
