// vLLM's second result file: with SAVE_TO_PYTORCH_BENCHMARK_FORMAT set (any non-empty value),
// `vllm bench serve --save-result` also writes {result path without its extension}.pytorch.json
// in the PyTorch OSS benchmark database's layout, one record per headline metric
// (vllm/benchmarks/serve.py save_to_pytorch_benchmark_format and
// vllm/benchmarks/lib/utils.py convert_to_pytorch_benchmark_format).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "bench/bench_options.h"
#include "common/status.h"

namespace crosspoint::bench {

inline constexpr const char* kPytorchBenchmarkFormatEnv = "SAVE_TO_PYTORCH_BENCHMARK_FORMAT";

// Whether the environment asks for the file (the variable set and not empty, as Python's truth).
bool pytorch_benchmark_format_requested();

// The options under vLLM's argument names, as vars(args) would hold them (the --header values
// redacted, as vLLM redacts them).
nlohmann::ordered_json vllm_args_namespace(const BenchOptions& options);

// The records for one saved result (the object --save-result wrote): for each of vLLM's twelve
// headline metrics the result holds (median/mean/std/p99 of TTFT, TPOT and ITL), {"benchmark":
// {"name": "vLLM benchmark", "extra_info": {"args": ...}}, "model": {"name": model_id},
// "metric": {"name", "benchmark_values": [value], "extra_info": every other key of the
// result but the per-request lists}}.
nlohmann::ordered_json pytorch_benchmark_records(const BenchOptions& options, const nlohmann::ordered_json& result);

// {result_path without its extension}.pytorch.json.
std::string pytorch_benchmark_path(const std::string& result_path);

// Writes the records next to result_path; returns the file's path, or an empty string where
// the result has no headline metric (vLLM then writes no file).
Result<std::string> save_pytorch_benchmark_format(const BenchOptions& options, const nlohmann::ordered_json& result,
                                                  const std::string& result_path);

}  // namespace crosspoint::bench
