// What `crosspoint sweep` runs: the grid (precisions × concurrency levels), the workload of
// each cell, the SLO for goodput, the crossover search and where everything goes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace crosspoint::sweep {

struct SweepOptions {
  std::string crosspoint_exe;                 // the binary run as child processes (quantize, serve, bench, eval, hwinfo)
  std::string model = "default";              // FP16 model directory, or "default"
  std::vector<std::string> precisions;        // "fp16", "w8a8-fp8", "w4a16"; order kept
  std::vector<int> concurrency;               // client concurrency levels, increasing
  int num_prompts = 8;                        // requests per cell
  std::string dataset = "sharegpt";           // bench --dataset-name
  std::string dataset_path;                   // ShareGPT file; empty = the cache's copy
  int output_len = 16;                        // fixed output tokens per request (bench --sharegpt-output-len); 0 = the dataset's
  std::string device = "auto";                // auto | cpu | cuda (this build: cpu only)
  std::optional<double> slo_ttft_ms;          // goodput SLO
  std::optional<double> slo_tpot_ms;
  int bisect_resolution = 4;                  // stop bisecting when a crossover bracket is this narrow (levels)
  int max_bisect_runs = 4;                    // extra concurrency levels at most
  std::string out_dir = "sweep-out";
  std::string quant_cache_dir;                // quantised checkpoints; empty = <cache>/quantized
  std::string quant_method = "gptq";          // w4a16: gptq or rtn
  int quant_calib_samples = 8;                // gptq calibration samples (quantize --calib-samples)
  int eval_samples = 4;                       // crosspoint eval --num-samples
  int eval_max_tokens = 128;                  // crosspoint eval --max-tokens
  std::string kv_cache_memory = "1GiB";       // serve --kv-cache-memory
  int max_model_len = 2048;                   // serve --max-model-len (prompt + output)
  int threads = 0;                            // serve/eval/quantize --threads; 0 = all cores
  double server_start_timeout_s = 300;        // wait for /health at most this long
  int num_warmups = 1;                        // bench --num-warmups
};

// "fp16,w8a8-fp8" -> {"fp16", "w8a8-fp8"}; each must be a known precision, no repeats.
Result<std::vector<std::string>> parse_precision_list(const std::string& text);
// "1,4,16" -> {1, 4, 16}; positive integers, sorted, without repeats.
Result<std::vector<int>> parse_concurrency_list(const std::string& text);
// "ttft:500,tpot:50" (either part optional) into the options' SLO fields.
Status parse_slo(const std::string& text, SweepOptions& options);
// Every check that can be made before anything runs (the executable, the model directory,
// the dataset file, the device, the numbers); the error names the option.
Status validate_sweep_options(const SweepOptions& options);

}  // namespace crosspoint::sweep
