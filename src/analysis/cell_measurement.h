// One measured cell of a study: a precision served at one concurrency, with the client-side
// latency statistics of a `bench serve` run and the server-side samples taken during it.
// Read from vLLM-style result JSON, so results of other engines work too.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "analysis/bootstrap.h"
#include "analysis/interference.h"
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
  std::optional<double> median_e2el_ms, p99_e2el_ms;
  std::optional<double> output_throughput_tok_s;  // "output_throughput"
  std::optional<double> request_goodput_req_s;    // "request_goodput" (legacy "request_goodput:")

  // Server-side samples over the run (crosspoint bench extension keys, see docs/analysis.md).
  std::optional<double> mean_running_batch;  // sequences per decode step, time-averaged
  // The same over the samples with a request running ("mean_running_while_busy"): the batch
  // of the decode steps, which the roofline uses (the whole-run mean counts idle gaps).
  std::optional<double> busy_running_batch;
  // The same inside the steady-state window (client holding all its slots; docs/bench.md).
  std::optional<double> steady_running_batch;
  std::optional<double> peak_running_batch;
  std::optional<double> mean_context_tokens;  // mean context length of running sequences
  // True when mean_context_tokens was estimated by analyze_study from the KV cache's usage
  // (mean usage x KV tokens / mean running batch), the bench not having recorded it.
  bool context_from_kv_usage = false;
  std::optional<int64_t> num_preemptions;
  std::optional<double> mean_kv_cache_usage;  // KV-cache usage averaged over the samples, fraction
  std::optional<double> max_kv_cache_usage;   // highest KV-cache usage sampled, fraction of the capacity
  // Prompt tokens served from the prefix cache over the run / prompt tokens looked up (the
  // server's vllm:prefix_cache_hits / queries counters), when the server exports them.
  std::optional<double> prefix_cache_hit_rate;
  std::optional<double> kv_cache_tokens;  // KV capacity reported by the server at start-up
  std::optional<double> max_model_len;
  std::optional<double> weight_bytes_loaded;  // the server's "weights loaded" figure, bytes

  // Per-request token counts when saved with --save-detailed ("input_lens", "output_lens").
  std::vector<int64_t> input_lens;
  std::vector<int64_t> output_lens;

  // Per-request client measurements of the successful requests, milliseconds, when the result
  // keeps its per-request lists ("ttfts", "itls", "latencies", "output_lens" in seconds, as
  // vLLM's --save-detailed): TPOT is (latency - TTFT) / (output tokens - 1) for replies of two
  // tokens or more, as the bench computes it. Repeated runs of a cell are pooled here.
  std::vector<double> request_ttft_ms, request_tpot_ms, request_e2el_ms;
  std::vector<std::vector<double>> request_itl_ms;  // each request's gaps
  std::vector<double> request_output_tokens;        // beside request_e2el_ms

  // Repeated runs merged into this cell (merge_repeated_runs): how many, and each run's output
  // throughput (the spread of throughput comes from them when there are kMinRunsForRunInterval or more).
  int num_runs = 1;
  std::vector<double> run_output_throughputs;

  // Confidence intervals (estimate_intervals): bootstrap over requests for the latency
  // percentiles, repeats or a request bootstrap for throughput. nullopt when not estimated.
  std::optional<Interval> median_tpot_ci, p99_tpot_ci, median_itl_ci, p99_itl_ci;
  std::optional<Interval> median_ttft_ci, p99_ttft_ci, median_e2el_ci, p99_e2el_ci;
  std::optional<Interval> output_throughput_ci;

  // The busy-machine guard: one record per run ("machine" key written by crosspoint sweep),
  // and the verdict (interfered when any run was).
  std::vector<InterferenceRecord> machine;
  bool interfered = false;
  std::string interference_reason;
};

// Reads one vLLM `bench serve` result object (current or legacy keys). The precision label
// comes from precision_label when non-empty, else from the keys "precision", "metadata"
// .precision, "label", or "model_id", in that order. Non-numeric values for known keys are
// errors naming source and key; unknown keys are ignored.
Result<CellMeasurement> parse_cell_measurement(const nlohmann::json& result, const std::string& source_name,
                                               const std::string& precision_label = "");

// Runs from which output throughput's interval is the runs' own spread (a Student t interval);
// with fewer, the pooled requests' bootstrap (a t interval over two runs has 1 degree of
// freedom and a factor of 12.7: it would make a second run widen the interval it was meant to
// narrow).
inline constexpr size_t kMinRunsForRunInterval = 3;

// Merges the runs of each (precision, concurrency) into one cell, in order of first
// appearance: per-request lists pooled, latency percentiles recomputed from the pooled lists
// (linear, as the bench), counts and durations summed, output throughput the mean of the runs
// (each kept in run_output_throughputs), server samples averaged (peaks: the maximum), the
// interference verdict the union of the runs'. A single run is returned as it is (with its
// throughput as the one run_output_throughputs entry).
std::vector<CellMeasurement> merge_repeated_runs(const std::vector<CellMeasurement>& runs);

// Fills the cell's *_ci intervals (docs/analysis.md, "Intervals") and its interference
// verdict from its machine records. Latencies: percentile bootstrap over requests (ITL:
// resampling whole requests). Output throughput: a Student t interval over the runs when
// there are kMinRunsForRunInterval or more, else the bootstrap of the pooled requests' output
// tokens / latency applied to the measured throughput (the runs' mean). Cells without per-request lists get no latency
// intervals.
void estimate_intervals(CellMeasurement& cell, const BootstrapOptions& options = {},
                        const InterferenceThresholds& thresholds = {});

// A file holding one result object, a JSON array of them, or JSON lines (vLLM
// --append-result). Every object becomes one cell.
Result<std::vector<CellMeasurement>> load_cell_measurements(const std::string& path,
                                                            const std::string& precision_label = "");

}  // namespace crosspoint::analysis
