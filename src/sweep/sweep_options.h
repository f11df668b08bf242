// What `crosspoint sweep` runs: the grid (precisions × concurrency levels), the workload of
// each cell, the SLO for goodput, the crossover search and where everything goes.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"

namespace crosspoint::sweep {

struct SweepOptions {
  std::string crosspoint_exe;  // the binary run as child processes (quantize, serve, bench, eval, hwinfo)
  // The server studied: "crosspoint", "llama.cpp" (llama-cpp-python's OpenAI server on GGUFs
  // made from the default model's GGUF), or any server from serve_cmd (engine.h).
  std::string engine = "crosspoint";
  std::string serve_cmd;  // --serve-cmd template ({model} {port} {host} {precision}); empty = --engine's server
  std::string python;     // llama.cpp: the Python with llama_cpp; empty = <cache>/venv/bin/python
  // llama.cpp: the GGUF of --model that every format is made from (F16 and the quantised
  // ones, by llama.cpp's own quantiser); empty = the default model's released Q4_1 GGUF.
  std::string gguf;
  std::string engine_exe;               // vllm: the vllm executable (default "vllm"); sglang: its Python ("python3")
  std::string model = "default";        // FP16 model directory, or "default"
  std::vector<std::string> precisions;  // "fp16", "w8a8-fp8", "w4a16"; order kept
  std::vector<int> concurrency;         // client concurrency levels, increasing
  int num_prompts = 8;                  // requests per cell (levels without an entry below)
  std::map<int, int> num_prompts_by_level;  // concurrency -> requests, from "--num-prompts 20,100,200"
  std::string dataset = "sharegpt";         // bench --dataset-name: sharegpt, random or prefix_repetition
  std::string dataset_path;                 // ShareGPT file; empty = the cache's copy
  int output_len = 16;          // fixed output tokens per request (bench --sharegpt-output-len); 0 = the dataset's
  std::string device = "auto";  // auto | cpu | cuda; auto = cuda when a GPU is visible (run_sweep resolves it)
  double gpu_memory_utilization = 0.9;  // cuda: serve --gpu-memory-utilization (fraction of GPU memory)
  bool enforce_eager = false;           // cuda: serve --enforce-eager (no CUDA graphs)
  bool deterministic = false;           // serve --deterministic (batch-invariant outputs)
  std::string ceilings_path;  // measured ceilings: shared/tools/gpu/ceilings.py or hwinfo --json; empty = measure
  std::string hardware;       // cuda: datasheet entry used when the GPU cannot be measured (hwinfo --hardware)
  std::map<std::string, std::string> precision_models;  // precision -> ready checkpoint (no quantising)
  // precision -> an lm-evaluation-harness results file of that precision served (--harness-results)
  std::vector<std::pair<std::string, std::string>> harness_results;
  std::optional<double> slo_ttft_ms;  // goodput SLO
  std::optional<double> slo_tpot_ms;
  int bisect_resolution = 4;  // stop bisecting when a crossover bracket is this narrow (levels)
  int max_bisect_runs = 4;    // extra concurrency levels at most
  std::string out_dir = "sweep-out";
  std::string quant_cache_dir;           // quantised checkpoints; empty = <cache>/quantized
  std::string quant_method = "gptq";     // w4a16: gptq or rtn
  int quant_calib_samples = 8;           // gptq calibration samples (quantize --calib-samples)
  int eval_samples = 4;                  // crosspoint eval --num-samples
  int eval_max_tokens = 128;             // crosspoint eval --max-tokens
  std::string kv_cache_memory = "1GiB";  // serve --kv-cache-memory
  // serve --memory-budget on every server (both devices; replaces the two above): a smaller
  // GPU's capacity, named in the report's title. Empty = off.
  std::string memory_budget;
  // KV cache dtypes every precision is served with (serve --kv-cache-dtype): {"auto"}, or with
  // "fp8" as a second axis ("w4a16+kv-fp8" beside "w4a16").
  std::vector<std::string> kv_cache_dtypes = {"auto"};
  // Prefix caching modes every precision is served with: {"default"} (the server's own), or
  // "on" / "off" as an axis ("w4a16+prefix-cache" beside "w4a16+no-prefix-cache").
  std::vector<std::string> prefix_caching = {"default"};
  // Ranks every precision is split over (serve --tensor-parallel-size): {1}, or more as an axis
  // ("fp16-tp2" beside "fp16"); above 1 on the CPU only, where the ranks are threads.
  std::vector<int> tensor_parallel_sizes = {1};
  // --dataset prefix_repetition: N shared prefixes x suffixes (bench's --prefix-repetition-*);
  // the output length is --output-len (0: bench's default).
  int prefix_len = 256;
  int suffix_len = 256;
  int num_prefixes = 10;
  int max_model_len = 2048;             // serve --max-model-len (prompt + output)
  int max_num_seqs = 0;                 // serve --max-num-seqs; 0 = serve's default
  int threads = 0;                      // serve/eval/quantize --threads; 0 = all cores
  double server_start_timeout_s = 300;  // wait for /health at most this long
  int num_warmups = 1;                  // bench --num-warmups
  bool ignore_eos = false;              // bench --ignore-eos (random weights: every reply its full length)
  int random_input_len = 0;             // --dataset random: bench --random-input-len; 0 = bench's default
  int repeats = 1;                      // bench runs per cell to start with (run k samples prompts with seed k - 1)
  // Seconds for measuring cells (grid, extra runs, crossover levels; not quantising, ceilings or
  // quality), counted from the first cell. While the two best precisions of median TPOT or
  // output throughput are not separable at some level and the time left covers it, both cells
  // get another run (docs/sweep.md, "Sample size"). 0 = no extra runs; negative = the default
  // for the device (run_sweep: kDefaultCpuTimeBudgetS on the CPU, 0 on CUDA, where a GPU study's
  // calls have time limits of their own). Time spent by earlier runs of the same --out counts.
  double time_budget_s = 0;
  int max_runs_per_cell = 8;  // extra runs stop at this many runs of a cell
  int rerun_interfered = 0;   // re-measure a run the busy-machine guard marked, up to this many times
  // Write study.json and the report from the cells in out_dir without measuring anything (a
  // sweep cut short, or a report made with a newer crosspoint).
  bool report_only = false;
};

// The CPU default of --time-budget: about the grid's own time again on the busy 2-core machine.
inline constexpr double kDefaultCpuTimeBudgetS = 300;

// "fp16,w8a8-fp8" -> {"fp16", "w8a8-fp8"}; each must be a known precision, no repeats.
Result<std::vector<std::string>> parse_precision_list(const std::string& text);
// "1,4,16" -> {1, 4, 16}; positive integers, sorted, without repeats.
Result<std::vector<int>> parse_concurrency_list(const std::string& text);
// "ttft:500,tpot:50" (either part optional) into the options' SLO fields.
Status parse_slo(const std::string& text, SweepOptions& options);
// "--num-prompts": one number for every level, or one per --concurrency item in the order
// given ("20,100,200" with "1,10,100"). The error names the option and the counts.
Status parse_num_prompts(const std::string& num_prompts_text, const std::string& concurrency_text,
                         SweepOptions& options);
// Requests of the cell at `concurrency`: its own entry; a level between entries (a crossover
// probe) takes the entry of the next higher level (the last entry above the highest), so a
// probe never runs with fewer requests than the level below it.
int num_prompts_for_level(const SweepOptions& options, int concurrency);
// "--precision-model w4a16=/models/qwen-gptq" (repeatable): a ready checkpoint serves that
// precision instead of one quantised from --model. fp16 comes from --model itself.
Status parse_precision_model(const std::string& text, SweepOptions& options);
// Every check that can be made before anything runs (the executable, the model directory,
// the dataset file, the device, the numbers); the error names the option.
Status validate_sweep_options(const SweepOptions& options);

}  // namespace crosspoint::sweep
