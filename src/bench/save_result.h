// vLLM's result saving (--save-result, --append-result, --result-dir, --result-filename,
// --save-detailed): where the file goes and what one run writes to it.
#pragma once

#include <string>

#include "bench/bench_options.h"
#include "bench/bench_result.h"
#include "common/status.h"

namespace crosspoint::bench {

// The path --save-result / --append-result write for this run: --result-filename, else vLLM's
// default name (vllm_bench_flags.h), inside --result-dir when given.
std::string vllm_result_path(const BenchOptions& options, const BenchResult& result);

// Writes result_to_json_line(result, --save-detailed) to vllm_result_path, creating
// --result-dir: replacing the file, or with --append-result appending it after a newline when
// the file is not empty (one JSON object per line, as vLLM); with SAVE_TO_PYTORCH_BENCHMARK_FORMAT
// set, also vLLM's second file (pytorch_benchmark_format.h). Returns the result's path.
Result<std::string> save_vllm_result(const BenchOptions& options, const BenchResult& result);

}  // namespace crosspoint::bench
