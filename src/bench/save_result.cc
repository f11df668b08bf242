#include "bench/save_result.h"

#include <filesystem>
#include <fstream>

#include "bench/pytorch_benchmark_format.h"
#include "bench/vllm_bench_flags.h"
#include "common/log.h"

namespace crosspoint::bench {

std::string vllm_result_path(const BenchOptions& o, const BenchResult& r) {
  ResultNameInputs in;
  in.label = o.label;
  in.backend = o.backend;
  in.request_rate = o.request_rate;
  in.max_concurrency = o.max_concurrency;
  in.model_id = o.model;
  in.date = r.date;
  in.ramp_up_strategy = o.ramp_up_strategy;
  in.ramp_up_start_rps = o.ramp_up_start_rps.value_or(0);
  in.ramp_up_end_rps = o.ramp_up_end_rps.value_or(0);
  return result_path(o.result_dir, o.result_filename, in);
}

Result<std::string> save_vllm_result(const BenchOptions& o, const BenchResult& r) {
  const std::string path = vllm_result_path(o, r);
  std::error_code error;
  if (!o.result_dir.empty()) {
    std::filesystem::create_directories(o.result_dir, error);
    if (error) return io_error("--result-dir: " + o.result_dir + ": " + error.message());
  }
  const bool append = o.append_result;
  const bool non_empty = append && std::filesystem::exists(path, error) && std::filesystem::file_size(path, error) > 0;
  std::ofstream out(path, std::ios::binary | (append ? std::ios::app : std::ios::trunc));
  if (!out) return io_error("result file: " + path + ": cannot open for writing");
  if (non_empty) out << "\n";
  const std::string line = result_to_json_line(r, o.save_detailed);
  out << line;
  if (!out) return io_error("result file: " + path + ": write failed");
  if (pytorch_benchmark_format_requested()) {
    CROSSPOINT_ASSIGN_OR_RETURN(const std::string pytorch_path,
                                save_pytorch_benchmark_format(o, nlohmann::ordered_json::parse(line), path));
    if (!pytorch_path.empty()) log_info("bench: {} records written to {}", kPytorchBenchmarkFormatEnv, pytorch_path);
  }
  return path;
}

}  // namespace crosspoint::bench
