// `crosspoint sweep` as a library call: quantise (cached), serve each precision, bench every
// concurrency level, evaluate quality, bisect the crossovers, and write the report. Every
// finished piece is a file under the output directory, and a piece whose file exists is
// not run again, so an interrupted sweep resumes where it stopped.
//
// Output directory layout:
//   sweep.json                      the options of the last run
//   hwinfo.json                     `crosspoint hwinfo --json` of the device served on (the ceilings,
//                                   measured at the start; a resumed run keeps them)
//   cells/<precision>-c<N>.json     one `bench serve` result per precision and concurrency
//   servers/<precision>.json        start-up facts of the precision's server (cold start, capacity)
//   quality/<precision>.json        `crosspoint eval --json` against the FP16 model
//   logs/                           every child's log
//   study.json                      all of the above as one study file (`crosspoint roofline --study`)
//   report.md, report.html, *.svg   the report
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "sweep/sweep_options.h"

namespace crosspoint::sweep {

// What one call did, for the summary line and the tests.
struct SweepSummary {
  int num_cells_run = 0;         // bench runs made by this call
  int num_cells_reused = 0;      // cells found in the output directory and kept
  int num_bisection_levels = 0;  // extra concurrency levels added by the crossover search
  // Counted over every call on the same --out (budget.json keeps them):
  int num_extra_runs = 0;        // runs added to undecided cells within --time-budget
  int num_reruns = 0;            // runs re-measured because the busy-machine guard marked them
  int num_interfered_cells = 0;  // cells still marked at the end
  double measure_s = 0;          // wall time spent measuring cells (this call and earlier ones on the same --out)
  double time_budget_s = 0;      // the budget it ran under (the device's default resolved)
  // Comparisons of median TPOT / output throughput still not separable at the end
  // ("median TPOT at 4: w4a16 vs fp16"), and whether a time budget was given and spent.
  std::vector<std::string> undecided;
  bool budget_too_small = false;  // the time budget ran out first
  bool runs_capped = false;       // every undecided comparison's cells reached --max-runs-per-cell
  std::string report_md_path;
  std::string report_html_path;
};

Result<SweepSummary> run_sweep(const SweepOptions& options);

// The cache directory of one quantised checkpoint: <quant cache>/<model name>-<hash of the
// model path>-<scheme>[-rtn].
std::string quantized_checkpoint_dir(const SweepOptions& options, const std::string& fp16_model_dir,
                                     const std::string& precision);

// The `crosspoint serve` command line of one precision (without --host/--port): on the CPU
// with --device cpu --kv-cache-memory and --threads, on CUDA with --device cuda
// --gpu-memory-utilization (and --enforce-eager when asked). options.device is the resolved
// device (run_sweep turns auto into cpu or cuda); anything but "cuda" serves on the CPU.
std::vector<std::string> serve_command(const SweepOptions& options, const std::string& model_dir,
                                       const std::string& kv_cache_dtype = "auto",
                                       const std::string& prefix_caching = "default", int tensor_parallel_size = 1);

// The `crosspoint hwinfo --json` command line that measures the ceilings of the sweep's
// device: cuda measures the GPU (--hardware NAME as the fallback when given); cpu --quick.
std::vector<std::string> hwinfo_command(const SweepOptions& options);

// "cells/w4a16-c16.json" under out_dir (the cell's first run).
std::string cell_result_path(const std::string& out_dir, const std::string& precision, int concurrency);
// Run k of a cell: run 1 is cell_result_path, run k > 1 "cells/w4a16-c16-r<k>.json".
std::string cell_run_path(const std::string& out_dir, const std::string& precision, int concurrency, int run);
// The run files of a cell that exist, in run order (runs 1..100 looked for).
std::vector<std::string> cell_run_paths(const std::string& out_dir, const std::string& precision, int concurrency);

}  // namespace crosspoint::sweep
