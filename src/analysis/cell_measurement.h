// One measured cell of a study: a precision served at one concurrency, with the client-side
// latency statistics of a `bench serve` run and the server-side samples taken during it.
// Read from vLLM-style result JSON, so results of other engines work too.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "common/status.h"

namespace crosspoint::analysis {

struct CellMeasurement {
  std::string precision;      // label as given: "fp16", "w8a8-fp8", "w4a16"
  double concurrency = 0;     // max in-flight requests (vLLM max_concurrency); 0 = unbounded
  int64_t num_completed = 0;  // "completed"
  int64_t num_failed = 0;     // "failed"
  double duration_s = 0;      // "duration"

  // Client-side statistics, milliseconds (vLLM keys median_tpot_ms, p99_tpot_ms, ...).
  std::optional<double> mean_tpot_ms, median_tpot_ms, p99_tpot_ms;
  std::optional<double> mean_itl_ms, median_itl_ms, p99_itl_ms;
  std::optional<double> mean_ttft_ms, median_ttft_ms, p99_ttft_ms;
  std::optional<double> output_throughput_tok_s;  // "output_throughput"
  std::optional<double> request_goodput_req_s;    // "request_goodput" (legacy "request_goodput:")

  // Server-side samples over the run (crosspoint bench extension keys, see docs/analysis.md).
  std::optional<double> mean_running_batch;  // sequences per decode step, time-averaged
  // The same inside the steady-state window (client holding all its slots; docs/bench.md).
  std::optional<double> steady_running_batch;
  std::optional<double> peak_running_batch;
  std::optional<double> mean_context_tokens;  // mean context length of running sequences
  std::optional<int64_t> num_preemptions;
  std::optional<double> kv_cache_tokens;  // KV capacity reported by the server at start-up
  std::optional<double> max_model_len;
  std::optional<double> weight_bytes_loaded;  // the server's "weights loaded" figure, bytes

  // Per-request token counts when saved with --save-detailed ("input_lens", "output_lens").
  std::vector<int64_t> input_lens;
  std::vector<int64_t> output_lens;
};

// Reads one vLLM `bench serve` result object (current or legacy keys). The precision label
// comes from precision_label when non-empty, else from the keys "precision", "metadata"
// .precision, "label", or "model_id", in that order. Non-numeric values for known keys are
// errors naming source and key; unknown keys are ignored.
Result<CellMeasurement> parse_cell_measurement(const nlohmann::json& result, const std::string& source_name,
                                               const std::string& precision_label = "");

// A file holding one result object, a JSON array of them, or JSON lines (vLLM
// --append-result). Every object becomes one cell.
Result<std::vector<CellMeasurement>> load_cell_measurements(const std::string& path,
                                                            const std::string& precision_label = "");

}  // namespace crosspoint::analysis
