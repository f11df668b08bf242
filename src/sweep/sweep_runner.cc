#include "sweep/sweep_runner.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "analysis/crossover.h"
#include "analysis/gpu_ceilings.h"
#include "analysis/hardware_json.h"
#include "analysis/model_shape.h"
#include "analysis/study_results.h"
#include "bench/bench_options.h"
#include "common/log.h"
#include "common/paths.h"
#include "common/progress_bar.h"
#include "sweep/child_process.h"
#include "sweep/engine.h"
#include "sweep/machine_load.h"
#include "sweep/measured_ceilings.h"
#include "sweep/sample_growth.h"
#include "sweep/served_label.h"
#include "sweep/harness_quality.h"
#include "sweep/served_model.h"
#include "sweep/sweep_report.h"

namespace crosspoint::sweep {
namespace fs = std::filesystem;

namespace {

// Metrics whose crossovers get extra concurrency levels.
const analysis::Metric kBisectedMetrics[] = {analysis::Metric::kMedianTpot, analysis::Metric::kP99Tpot,
                                             analysis::Metric::kOutputThroughput};

Status write_text_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return io_error(tmp + ": cannot open for writing");
    out << text;
    if (!out) return io_error(tmp + ": write failed");
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) return io_error(path + ": rename failed: " + ec.message());
  return Status::ok();
}

// A JSON file that parses, or nullopt (missing or broken files are redone, not trusted).
std::optional<nlohmann::json> read_json_file(const std::string& path) {
  if (!fs::is_regular_file(path)) return std::nullopt;
  nlohmann::json j = nlohmann::json::parse(read_text_file(path), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return std::nullopt;
  return j;
}

bool cell_is_finished(const std::string& path) {
  auto j = read_json_file(path);
  return j && j->is_object() && j->contains("completed") && j->contains("max_concurrency");
}

// The study's group of 128 input rows per scale when it divides every linear layer's input
// width, else the largest of 64, 32, 16 that does (SmolLM2-135M: hidden 576 = 9 x 64).
Result<int64_t> w4a16_group_size(const std::string& model_dir) {
  CROSSPOINT_ASSIGN_OR_RETURN(analysis::ModelShape shape, analysis::load_model_shape(model_dir + "/config.json"));
  const int64_t widths[] = {shape.hidden_size, shape.intermediate_size, shape.num_attention_heads * shape.head_dim};
  for (int64_t group : {128, 64, 32, 16}) {
    bool divides = true;
    for (int64_t width : widths) divides = divides && width > 0 && width % group == 0;
    if (divides) return group;
  }
  return invalid_argument(model_dir +
                          "/config.json: no W4A16 group size of 128, 64, 32 or 16 divides the layer widths");
}

class SweepRun {
 public:
  SweepRun(const SweepOptions& options, std::string fp16_dir)
      : engine_(engine_of(options.engine, options.serve_cmd)),
        o_(options),
        fp16_dir_(std::move(fp16_dir)),
        logs_dir_(options.out_dir + "/logs") {}

  Result<SweepSummary> run();
  // The study and the report from the cells already in --out; nothing is measured.
  Result<SweepSummary> report_only();

 private:
  Status measure_hardware();
  Status quantize_if_missing(const std::string& precision);
  // llama.cpp: the precision's GGUF (llama_cpp_format_of) made from the default model's GGUF.
  Status make_gguf_if_missing(const std::string& precision);
  // A --gguf source gets its own cache names (its file name), so two sources never share a file.
  std::string llama_cpp_gguf_path(const std::string& precision) const {
    const std::string source = o_.gguf.empty() ? "" : "-from-" + fs::path(o_.gguf).stem().string();
    return quantized_checkpoint_dir(o_, fp16_dir_, precision) + source + "-llama.cpp-" +
           llama_cpp_format_of(precision) + ".gguf";
  }
  std::string python() const { return o_.python.empty() ? cache_dir() + "/venv/bin/python" : o_.python; }
  // The server of a label, started: crosspoint serve, llama_cpp.server or the --serve-cmd template.
  Result<ServedModel> start_server(const std::string& precision);
  const Engine engine_;
  // The checkpoint a label serves: its weight precision's (labels with +kv-fp8 share it).
  std::string model_dir_for(const std::string& label) const {
    const std::string precision = weight_precision_of(label);
    if (engine_ == Engine::kLlamaCpp) {
      auto given = o_.precision_models.find(precision);
      return given != o_.precision_models.end() ? given->second : llama_cpp_gguf_path(precision);
    }
    if (precision == "fp16") return fp16_dir_;
    auto given = o_.precision_models.find(precision);
    return given != o_.precision_models.end() ? given->second : quantized_checkpoint_dir(o_, fp16_dir_, precision);
  }
  // Serves the precision once and benches every level in `levels` whose runs 1..--repeats are missing.
  Status run_levels(const std::string& precision, const std::vector<int>& levels, ProgressBar& bar);
  // Serves the precision once and benches every (level, run) whose file is missing.
  Status run_cells(const std::string& precision, const std::vector<std::pair<int, int>>& level_runs, ProgressBar* bar);
  Status bench_cell(const std::string& precision, int concurrency, int run, const ServedModel& server);
  // Re-measures runs the busy-machine guard marked, up to --rerun-interfered times.
  Status rerun_interfered_runs();
  // Extra runs for undecided comparisons while --time-budget lasts.
  Status grow_samples();
  // Measuring time of this call plus what earlier calls on the same --out spent (budget.json).
  double measure_elapsed_s() const {
    return prior_measure_s_ + std::chrono::duration<double>(std::chrono::steady_clock::now() - measure_start_).count();
  }
  // The cells with runs merged, intervals and interference verdicts estimated.
  Result<std::vector<analysis::CellMeasurement>> load_merged_cells() const;
  Status write_budget_file();
  Status evaluate_quality(const std::string& precision);
  // Concurrency levels (already measured or not) the crossover search asks for next.
  std::vector<int> plan_bisection_levels() const;
  // levels_: the grid's and those of cells an earlier call left in --out (crossover levels).
  void collect_levels();
  Result<std::vector<analysis::CellMeasurement>> load_cells() const;
  nlohmann::json options_json() const {
    return {{"model", fp16_dir_},
            {"engine", engine_display_name(engine_)},
            {"gguf", o_.gguf},
            {"precisions", o_.precisions},
            {"concurrency", o_.concurrency},
            {"num_prompts", o_.num_prompts},
            {"dataset", o_.dataset},
            {"dataset_path", o_.dataset_path},
            {"output_len", o_.output_len},
            {"slo_ttft_ms", o_.slo_ttft_ms.value_or(0)},
            {"slo_tpot_ms", o_.slo_tpot_ms.value_or(0)},
            {"bisect_resolution", o_.bisect_resolution},
            {"max_bisect_runs", o_.max_bisect_runs},
            {"quant_method", o_.quant_method},
            {"eval_samples", o_.eval_samples},
            {"kv_cache_memory", o_.kv_cache_memory},
            {"memory_budget", o_.memory_budget},
            {"kv_cache_dtypes", o_.kv_cache_dtypes},
            {"prefix_caching", o_.prefix_caching},
            {"prefix_len", o_.prefix_len},
            {"suffix_len", o_.suffix_len},
            {"num_prefixes", o_.num_prefixes},
            {"max_model_len", o_.max_model_len},
            {"max_num_seqs", o_.max_num_seqs},
            {"threads", o_.threads},
            {"device", o_.device},
            {"gpu_memory_utilization", o_.gpu_memory_utilization},
            {"enforce_eager", o_.enforce_eager},
            {"deterministic", o_.deterministic},
            {"ceilings", o_.ceilings_path},
            {"hardware", o_.hardware},
            {"precision_models", o_.precision_models},
            {"harness_results", o_.harness_results},
            {"num_prompts_by_level", num_prompts_by_level_json()},
            {"ignore_eos", o_.ignore_eos},
            {"random_input_len", o_.random_input_len},
            {"repeats", o_.repeats},
            {"time_budget_s", o_.time_budget_s},
            {"max_runs_per_cell", o_.max_runs_per_cell},
            {"rerun_interfered", o_.rerun_interfered}};
  }
  nlohmann::json num_prompts_by_level_json() const {
    nlohmann::json by_level = nlohmann::json::object();
    for (const auto& [level, count] : o_.num_prompts_by_level) by_level[std::to_string(level)] = count;
    return by_level;
  }

  std::string serve_device() const { return o_.device == "cuda" ? "cuda" : "cpu"; }

  const SweepOptions& o_;
  std::string fp16_dir_;
  std::string logs_dir_;
  std::set<int> levels_;  // every concurrency level of the sweep (grid and bisection)
  SweepSummary summary_;
  size_t num_cells_planned_ = 0;
  size_t num_cells_done_ = 0;
  std::chrono::steady_clock::time_point measure_start_ = std::chrono::steady_clock::now();
  double prior_measure_s_ = 0;
  std::map<std::string, int> rerun_attempts_;  // run file -> times re-measured in this call
};

Status SweepRun::measure_hardware() {
  const std::string path = o_.out_dir + "/hwinfo.json";
  if (!o_.ceilings_path.empty()) {
    // Measured beside the sweep (shared/tools/gpu/ceilings.py on the GPU): copied in every
    // run, so the report follows the file given.
    CROSSPOINT_ASSIGN_OR_RETURN(analysis::HardwareCeilings ceilings, load_measured_ceilings(o_.ceilings_path));
    auto raw = read_json_file(o_.ceilings_path);
    log_info("sweep: ceilings from {}: {} — read {:.0f} GB/s, fp16 {:.0f} TFLOP/s, fp8 {:.0f} TFLOP/s",
             o_.ceilings_path, ceilings.name, ceilings.bandwidth_gb_s, ceilings.fp16_tflops, ceilings.fp8_tflops);
    return write_text_atomically(
        path, measured_ceilings_hwinfo_json(ceilings, serve_device(), raw.value_or(nlohmann::json())).dump(2));
  }
  // A resumed sweep keeps the ceilings it measured, unless they were of the other device.
  auto kept = read_json_file(path);
  if (kept && kept->is_object() && kept->contains("device") && (*kept)["device"].is_string() &&
      (*kept)["device"].get<std::string>() == serve_device()) {
    log_info("sweep: ceilings kept from {}", path);
    return Status::ok();
  }
  const std::vector<std::string> argv = hwinfo_command(o_);
  if (serve_device() == "cuda") {
    // A child process, so every byte and the CUDA context are gone before the servers start.
    log_info("sweep: measuring the GPU's ceilings (crosspoint hwinfo --device cuda: bandwidth and GEMM rates){}",
             o_.hardware.empty() ? "" : ", datasheet " + o_.hardware + " if it cannot");
  } else {
    log_info("sweep: measuring this machine's ceilings (crosspoint hwinfo --quick)");
  }
  const std::string tmp = path + ".tmp";
  CROSSPOINT_RETURN_IF_ERROR(run_to_completion(argv, logs_dir_ + "/hwinfo.log", "crosspoint hwinfo", tmp));
  CROSSPOINT_ASSIGN_OR_RETURN(analysis::HardwareCeilings ceilings, analysis::load_ceilings(tmp));
  log_info("sweep: ceilings of {}: read {:.0f} GB/s, fp16 {:.1f} TFLOP/s, fp8 {:.1f} TFLOP/s ({})", ceilings.name,
           ceilings.bandwidth_gb_s, ceilings.fp16_tflops, ceilings.fp8_tflops, ceilings.source.substr(0, 80));
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) return io_error(path + ": rename failed: " + ec.message());
  return Status::ok();
}

Status SweepRun::quantize_if_missing(const std::string& label) {
  const std::string precision = weight_precision_of(label);
  // llama.cpp's F16 GGUF is made too: the model's release is Q4_1.
  if (engine_ == Engine::kLlamaCpp) return make_gguf_if_missing(precision);
  if (precision == "fp16") return Status::ok();
  if (engine_ == Engine::kCommand) return Status::ok();  // --model and --precision-model, as given
  const std::string dir = model_dir_for(precision);
  if (o_.precision_models.count(precision)) {
    log_info("sweep: {} checkpoint given with --precision-model: {}", precision, dir);
    return Status::ok();
  }
  if (fs::is_regular_file(dir + "/config.json")) {
    log_info("sweep: {} checkpoint from the cache: {}", precision, dir);
    return Status::ok();
  }
  // Written beside the final place and renamed at the end, so a checkpoint in the cache is
  // always a complete one.
  const std::string tmp = dir + ".partial";
  std::error_code ec;
  fs::create_directories(fs::path(dir).parent_path(), ec);
  if (ec) return io_error(dir + ": cannot create the cache directory: " + ec.message());
  log_info("sweep: quantising {} -> {} ({})", fp16_dir_, precision, dir);
  std::vector<std::string> argv = {o_.crosspoint_exe, "quantize", "--model", fp16_dir_, "--scheme",
                                   precision,         "--out",    tmp,       "--force"};
  if (precision == "w4a16") {
    CROSSPOINT_ASSIGN_OR_RETURN(int64_t group_size, w4a16_group_size(fp16_dir_));
    // On the GPU, GPTQ's usual windows: samples of 2,048 tokens cut from the joined conversations.
    const bool gpu = serve_device() == "cuda";
    argv.insert(argv.end(), {"--method", o_.quant_method, "--calib-samples", std::to_string(o_.quant_calib_samples),
                             "--calib-max-tokens", gpu ? "2048" : "128", "--group-size", std::to_string(group_size)});
    if (gpu) argv.push_back("--calib-pack");
    if (!o_.dataset_path.empty() && o_.dataset == "sharegpt")
      argv.insert(argv.end(), {"--calib-dataset", o_.dataset_path});
  }
  if (o_.threads > 0) argv.insert(argv.end(), {"--threads", std::to_string(o_.threads)});
  // On the sweep's device: W8A8 weights (the same bytes either way) and GPTQ (RTN stays on the CPU).
  argv.insert(argv.end(), {"--device", serve_device()});
  CROSSPOINT_RETURN_IF_ERROR(run_to_completion(argv, logs_dir_ + "/quantize-" + precision + ".log",
                                               "crosspoint quantize --scheme " + precision));
  fs::rename(tmp, dir, ec);
  if (ec) return io_error(dir + ": rename of the quantised checkpoint failed: " + ec.message());
  return Status::ok();
}

Status SweepRun::make_gguf_if_missing(const std::string& precision) {
  const std::string path = model_dir_for(precision);
  if (o_.precision_models.count(precision)) {
    log_info("sweep: {} GGUF given with --precision-model: {}", precision, path);
    return Status::ok();
  }
  if (fs::is_regular_file(path)) {
    log_info("sweep: {} ({}) GGUF from the cache: {}", precision, llama_cpp_format_of(precision), path);
    return Status::ok();
  }
  if (o_.model != "default" && o_.gguf.empty()) {
    return invalid_argument("--engine llama.cpp with --model " + o_.model +
                            ": give --gguf FILE (a GGUF of that model to make every format from) or "
                            "--precision-model " +
                            precision + "=GGUF");
  }
  const std::string source = o_.gguf.empty() ? cache_dir() + "/gguf/SmolLM2-135M-Instruct.Q4_1.gguf" : o_.gguf;
  if (!fs::is_regular_file(source)) return not_found(source + ": no such file (run scripts/setup.sh)");
  const std::string tmp = path + ".partial";
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  if (ec) return io_error(path + ": cannot create the cache directory: " + ec.message());
  const std::string format = llama_cpp_format_of(precision);
  log_info("sweep: {} -> llama.cpp {} for {} ({})", source, format, precision, path);
  // llama.cpp's own quantiser, through llama-cpp-python; allow_requantize, since the source is Q4_1.
  const std::string script =
      "import ctypes, sys, llama_cpp\n"
      "p = llama_cpp.llama_model_quantize_default_params()\n"
      "p.ftype = int(sys.argv[3])\n"
      "p.allow_requantize = True\n"
      "sys.exit(llama_cpp.llama_model_quantize(sys.argv[1].encode(), sys.argv[2].encode(), ctypes.byref(p)))\n";
  const std::vector<std::string> argv = {python(), "-c", script,
                                         source,   tmp,  std::to_string(llama_cpp_ftype_of(format))};
  CROSSPOINT_RETURN_IF_ERROR(
      run_to_completion(argv, logs_dir_ + "/quantize-" + precision + ".log", "llama_model_quantize to " + format));
  fs::rename(tmp, path, ec);
  if (ec) return io_error(path + ": rename of the GGUF failed: " + ec.message());
  return Status::ok();
}

Result<ServedModel> SweepRun::start_server(const std::string& precision) {
  const std::string server_log = logs_dir_ + "/serve-" + precision + ".log";
  if (engine_ == Engine::kCrosspoint) {
    const std::vector<std::string> serve_argv =
        serve_command(o_, model_dir_for(precision), kv_cache_dtype_of(precision), prefix_caching_of(precision),
                      tensor_parallel_size_of(precision));
    return ServedModel::start(serve_argv, server_log, o_.server_start_timeout_s);
  }
  const std::string host = "127.0.0.1";
  const int port = pick_free_port();
  if (port < 0) return io_error("no free loopback port for the " + engine_display_name(engine_) + " server");
  std::vector<std::string> argv;
  const EngineServeLimits limits{o_.max_model_len, o_.gpu_memory_utilization, o_.max_num_seqs, o_.enforce_eager};
  if (engine_ == Engine::kLlamaCpp) {
    argv = llama_cpp_server_command(python(), model_dir_for(precision), host, port, o_.max_model_len, o_.threads);
  } else if (engine_ == Engine::kVllm) {
    argv = vllm_server_command(o_.engine_exe.empty() ? "vllm" : o_.engine_exe, model_dir_for(precision), host, port,
                               limits);
  } else if (engine_ == Engine::kSglang) {
    argv = sglang_server_command(o_.engine_exe.empty() ? "python3" : o_.engine_exe, model_dir_for(precision), host,
                                 port, limits);
  } else {
    CROSSPOINT_ASSIGN_OR_RETURN(
        std::string command,
        substitute_serve_template(o_.serve_cmd, model_dir_for(precision), port, host, weight_precision_of(precision)));
    log_info("sweep: {}: {}", precision, command);
    argv = shell_command(command);
  }
  return ServedModel::start_external(argv, "http://" + host + ":" + std::to_string(port), "/v1/models",
                                     engine_display_name(engine_), server_log, o_.server_start_timeout_s);
}

Status SweepRun::bench_cell(const std::string& precision, int concurrency, int run, const ServedModel& server) {
  const std::string& base_url = server.base_url();
  const std::string path = cell_run_path(o_.out_dir, precision, concurrency, run);
  const std::string tmp = path + ".tmp";
  std::vector<std::string> argv = {o_.crosspoint_exe,
                                   "bench",
                                   "serve",
                                   "--base-url",
                                   base_url,
                                   "--model",
                                   "sweep",
                                   "--tokenizer",
                                   fp16_dir_,
                                   "--dataset-name",
                                   o_.dataset,
                                   "--num-prompts",
                                   std::to_string(num_prompts_for_level(o_, concurrency)),
                                   "--max-concurrency",
                                   std::to_string(concurrency),
                                   "--temperature",
                                   "0",
                                   "--percentile-metrics",
                                   "ttft,tpot,itl,e2el",
                                   "--metric-percentiles",
                                   "50,90,99",
                                   "--num-warmups",
                                   std::to_string(o_.num_warmups),
                                   "--seed",
                                   std::to_string(run - 1),
                                   "--label",
                                   precision,
                                   "--disable-progress",
                                   "--result-file",
                                   tmp};
  // The servers with a /metrics the bench understands (KV cache usage and batch over the run).
  if (engine_ == Engine::kCrosspoint || engine_ == Engine::kVllm || engine_ == Engine::kSglang)
    argv.insert(argv.end(), {"--metrics-interval", "0.25"});
  if (!o_.dataset_path.empty()) argv.insert(argv.end(), {"--dataset-path", o_.dataset_path});
  if (o_.ignore_eos) argv.push_back("--ignore-eos");
  if (o_.dataset == "random" && o_.random_input_len > 0) {
    argv.insert(argv.end(), {"--random-input-len", std::to_string(o_.random_input_len)});
  }
  if (o_.dataset == "prefix_repetition") {
    argv.insert(argv.end(),
                {"--prefix-repetition-prefix-len", std::to_string(o_.prefix_len), "--prefix-repetition-suffix-len",
                 std::to_string(o_.suffix_len), "--prefix-repetition-num-prefixes", std::to_string(o_.num_prefixes)});
  }
  if (o_.output_len > 0) {
    if (o_.dataset == "sharegpt") {
      argv.insert(argv.end(), {"--sharegpt-output-len", std::to_string(o_.output_len)});
    } else if (o_.dataset == "prefix_repetition") {
      argv.insert(argv.end(), {"--prefix-repetition-output-len", std::to_string(o_.output_len)});
    } else {
      argv.insert(argv.end(), {"--random-output-len", std::to_string(o_.output_len)});
    }
  }
  if (o_.slo_ttft_ms || o_.slo_tpot_ms) {
    argv.push_back("--goodput");
    if (o_.slo_ttft_ms) argv.push_back("ttft:" + std::to_string(*o_.slo_ttft_ms));
    if (o_.slo_tpot_ms) argv.push_back("tpot:" + std::to_string(*o_.slo_tpot_ms));
  }
  const std::string log = logs_dir_ + "/bench-" + precision + "-c" + std::to_string(concurrency) +
                          (run > 1 ? "-r" + std::to_string(run) : "") + ".log";
  const bool gpu = serve_device() == "cuda";
  const MachineSample before = sample_machine(server.pid(), gpu);
  CROSSPOINT_RETURN_IF_ERROR(run_to_completion(
      argv, log, "crosspoint bench serve (" + precision + ", concurrency " + std::to_string(concurrency) + ")"));
  const MachineSample after = sample_machine(server.pid(), gpu);
  // The busy-machine guard's record goes into the result itself, beside the run's number.
  const analysis::InterferenceRecord record = interference_between(before, after);
  // ordered_json keeps the bench's (vLLM's) key order.
  nlohmann::ordered_json result = nlohmann::ordered_json::parse(read_text_file(tmp), nullptr, false);
  if (result.is_discarded() || !result.is_object())
    return corrupt(tmp + ": crosspoint bench did not write a JSON object");
  result["machine"] = nlohmann::ordered_json::parse(analysis::interference_record_to_json(record).dump());
  result["run"] = run;
  CROSSPOINT_RETURN_IF_ERROR(write_text_atomically(path, result.dump()));
  std::error_code ec;
  fs::remove(tmp, ec);
  const analysis::InterferenceVerdict verdict = analysis::classify_interference(record);
  if (verdict.interfered) {
    log_info("sweep: {} at concurrency {} run {} measured under interference: {}", precision, concurrency, run,
             verdict.reason);
  }
  return Status::ok();
}

Status SweepRun::run_levels(const std::string& precision, const std::vector<int>& levels, ProgressBar& bar) {
  std::vector<std::pair<int, int>> level_runs;
  for (int level : levels) {
    for (int run = 1; run <= o_.repeats; ++run) level_runs.emplace_back(level, run);
  }
  return run_cells(precision, level_runs, &bar);
}

Status SweepRun::run_cells(const std::string& precision, const std::vector<std::pair<int, int>>& level_runs,
                           ProgressBar* bar) {
  std::vector<std::pair<int, int>> missing;
  for (const auto& [level, run] : level_runs) {
    if (cell_is_finished(cell_run_path(o_.out_dir, precision, level, run))) continue;
    missing.emplace_back(level, run);
  }
  const std::string startup_path = o_.out_dir + "/servers/" + precision + ".json";
  if (missing.empty() && read_json_file(startup_path)) return Status::ok();

  CROSSPOINT_ASSIGN_OR_RETURN(ServedModel server, start_server(precision));
  // The first start of this precision is its cold start; later ones (bisection) keep it.
  if (!read_json_file(startup_path)) {
    CROSSPOINT_RETURN_IF_ERROR(write_text_atomically(startup_path, server_startup_to_json(server.startup()).dump(2)));
  }
  for (const auto& [level, run] : missing) {
    if (Status s = bench_cell(precision, level, run, server); !s.is_ok()) {
      (void)server.stop();
      return s;
    }
    ++summary_.num_cells_run;
    if (bar != nullptr) bar->update(++num_cells_done_);
  }
  return server.stop();
}

Status SweepRun::rerun_interfered_runs() {
  for (int round = 1; round <= o_.rerun_interfered; ++round) {
    std::map<std::string, std::vector<std::pair<int, int>>> marked;
    size_t count = 0;
    for (const std::string& precision : o_.precisions) {
      for (int level : levels_) {
        for (int run = 1; run <= 100; ++run) {
          const std::string path = cell_run_path(o_.out_dir, precision, level, run);
          if (!fs::is_regular_file(path)) continue;
          auto loaded = analysis::load_cell_measurements(path, precision);
          if (!loaded.is_ok() || loaded.value().empty() || loaded.value().front().machine.empty()) continue;
          if (!analysis::classify_interference(loaded.value().front().machine.front()).interfered) continue;
          // Each run is re-measured at most --rerun-interfered times in one call, wherever the
          // call asks (after the grid, after the crossover search).
          int& attempts = rerun_attempts_[path];
          if (attempts >= o_.rerun_interfered) continue;
          ++attempts;
          // Kept for the record, out of the study (numbered past those of earlier calls).
          std::string aside;
          for (int k = 1; aside.empty() || fs::exists(aside); ++k) {
            aside = o_.out_dir + "/cells/interfered/" + fs::path(path).stem().string() + ".attempt" +
                    std::to_string(k) + ".json";
          }
          std::error_code ec;
          fs::create_directories(fs::path(aside).parent_path(), ec);
          fs::rename(path, aside, ec);
          if (ec) return io_error(path + ": cannot move aside: " + ec.message());
          marked[precision].emplace_back(level, run);
          ++count;
        }
      }
    }
    if (count == 0) return Status::ok();
    log_info("sweep: re-measuring {} run(s) marked by the busy-machine guard (at most {} time(s) each)", count,
             o_.rerun_interfered);
    for (const auto& [precision, level_runs] : marked)
      CROSSPOINT_RETURN_IF_ERROR(run_cells(precision, level_runs, nullptr));
    summary_.num_reruns += static_cast<int>(count);
  }
  return Status::ok();
}

Result<std::vector<analysis::CellMeasurement>> SweepRun::load_merged_cells() const {
  CROSSPOINT_ASSIGN_OR_RETURN(std::vector<analysis::CellMeasurement> runs, load_cells());
  std::vector<analysis::CellMeasurement> cells = analysis::merge_repeated_runs(runs);
  for (analysis::CellMeasurement& cell : cells) analysis::estimate_intervals(cell);
  return cells;
}

Status SweepRun::grow_samples() {
  if (o_.time_budget_s <= 0 || o_.precisions.size() < 2) return Status::ok();
  // What a server start costs here, from the start-up facts measured so far.
  double server_start_s = 0;
  int starts = 0;
  for (const std::string& precision : o_.precisions) {
    if (auto s = read_json_file(o_.out_dir + "/servers/" + precision + ".json")) {
      const ServerStartup startup = server_startup_from_json(*s);
      if (startup.startup_s) {
        server_start_s += *startup.startup_s;
        ++starts;
      }
    }
  }
  server_start_s = starts > 0 ? server_start_s / starts + 1 : 10;
  for (int round = 1;; ++round) {
    CROSSPOINT_ASSIGN_OR_RETURN(std::vector<analysis::CellMeasurement> cells, load_merged_cells());
    SampleGrowthInput input;
    input.cells = std::move(cells);
    input.remaining_s = o_.time_budget_s - measure_elapsed_s();
    input.server_start_s = server_start_s;
    input.max_runs_per_cell = o_.max_runs_per_cell;
    const SampleGrowthPlan plan = plan_sample_growth(input);
    if (plan.undecided.empty()) {
      log_info("sweep: every compared level of median TPOT and output throughput is decided (separable or a tie)");
      return Status::ok();
    }
    if (plan.cells.empty()) {
      if (plan.budget_too_small) {
        log_info(
            "sweep: {} comparison(s) still not separable; {:.0f} s of the {:.0f} s budget left is too little for "
            "another run of both cells",
            plan.undecided.size(), std::max(0.0, input.remaining_s), o_.time_budget_s);
      } else {
        log_info("sweep: {} comparison(s) still not separable; their cells have reached --max-runs-per-cell {}",
                 plan.undecided.size(), o_.max_runs_per_cell);
      }
      return Status::ok();
    }
    std::map<std::string, std::vector<std::pair<int, int>>> by_precision;
    for (const CellToGrow& c : plan.cells) {
      const int next_run = static_cast<int>(cell_run_paths(o_.out_dir, c.precision, c.concurrency).size()) + 1;
      by_precision[c.precision].emplace_back(c.concurrency, next_run);
    }
    log_info(
        "sweep: sample round {}: {} comparison(s) not separable; one more run of {} cell(s) (~{:.0f} s, {:.0f} s "
        "of the budget left)",
        round, plan.undecided.size(), plan.cells.size(), plan.estimated_s, input.remaining_s);
    for (const auto& [precision, level_runs] : by_precision)
      CROSSPOINT_RETURN_IF_ERROR(run_cells(precision, level_runs, nullptr));
    summary_.num_extra_runs += static_cast<int>(plan.cells.size());
  }
}

Status SweepRun::write_budget_file() {
  CROSSPOINT_ASSIGN_OR_RETURN(std::vector<analysis::CellMeasurement> cells, load_merged_cells());
  summary_.undecided.clear();
  nlohmann::json undecided = nlohmann::json::array();
  bool all_capped = true;
  for (const UndecidedComparison& u : undecided_comparisons(cells, 0.02)) {
    const std::string text =
        fmt::format("{} at {:g}: {} vs {}", analysis::metric_name(u.metric), u.concurrency, u.leader, u.runner_up);
    summary_.undecided.push_back(text);
    const bool capped = std::any_of(cells.begin(), cells.end(), [&](const analysis::CellMeasurement& c) {
      return c.concurrency == u.concurrency && (c.precision == u.leader || c.precision == u.runner_up) &&
             c.num_runs >= o_.max_runs_per_cell;
    });
    all_capped = all_capped && capped;
    undecided.push_back({{"metric", analysis::metric_name(u.metric)},
                         {"concurrency", u.concurrency},
                         {"leader", u.leader},
                         {"runner_up", u.runner_up},
                         {"runs_capped", capped}});
  }
  summary_.num_interfered_cells = 0;
  for (const auto& cell : cells) summary_.num_interfered_cells += cell.interfered ? 1 : 0;
  summary_.measure_s = measure_elapsed_s();
  summary_.time_budget_s = o_.time_budget_s;
  // Why comparisons stay undecided: no budget was given, every one of them has reached the run
  // cap, or the time ran out first.
  summary_.runs_capped = o_.time_budget_s > 0 && !summary_.undecided.empty() && all_capped;
  summary_.budget_too_small = o_.time_budget_s > 0 && !summary_.undecided.empty() && !all_capped;
  const nlohmann::json budget = {{"time_budget_s", o_.time_budget_s},
                                 {"measure_s", summary_.measure_s},
                                 {"repeats", o_.repeats},
                                 {"extra_runs", summary_.num_extra_runs},
                                 {"reruns", summary_.num_reruns},
                                 {"interfered_cells", summary_.num_interfered_cells},
                                 {"budget_too_small", summary_.budget_too_small},
                                 {"runs_capped", summary_.runs_capped},
                                 {"max_runs_per_cell", o_.max_runs_per_cell},
                                 {"undecided", undecided}};
  return write_text_atomically(o_.out_dir + "/budget.json", budget.dump(2));
}

// One evaluation per weights and KV cache (quality_label_of): prefix caching does not change them.
Status SweepRun::evaluate_quality(const std::string& label) {
  const std::string precision = quality_label_of(label);
  if (precision == "fp16" || o_.eval_samples == 0) return Status::ok();
  if (engine_ != Engine::kCrosspoint) {
    log_info("sweep: quality of {} not measured: crosspoint eval runs crosspoint's engine, not {}", precision,
             engine_display_name(engine_));
    return Status::ok();
  }
  const std::string path = o_.out_dir + "/quality/" + precision + ".json";
  if (read_json_file(path)) return Status::ok();
  log_info("sweep: quality of {} against fp16 (crosspoint eval, {} samples)", precision, o_.eval_samples);
  std::vector<std::string> argv = {o_.crosspoint_exe, "eval",
                                   "--model",         model_dir_for(precision),
                                   "--reference",     fp16_dir_,
                                   "--num-samples",   std::to_string(o_.eval_samples),
                                   "--max-tokens",    std::to_string(o_.eval_max_tokens),
                                   "--device",        serve_device(),
                                   "--json"};
  if (!o_.dataset_path.empty() && o_.dataset == "sharegpt") argv.insert(argv.end(), {"--dataset", o_.dataset_path});
  if (o_.threads > 0) argv.insert(argv.end(), {"--threads", std::to_string(o_.threads)});
  if (kv_cache_dtype_of(precision) != "auto")
    argv.insert(argv.end(), {"--kv-cache-dtype", kv_cache_dtype_of(precision)});
  const std::string tmp = path + ".tmp";
  CROSSPOINT_RETURN_IF_ERROR(
      run_to_completion(argv, logs_dir_ + "/eval-" + precision + ".log", "crosspoint eval of " + precision, tmp));
  if (!read_json_file(tmp)) return corrupt(tmp + ": crosspoint eval did not print JSON");
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) return io_error(path + ": rename failed: " + ec.message());
  return Status::ok();
}

Result<std::vector<analysis::CellMeasurement>> SweepRun::load_cells() const {
  std::vector<analysis::CellMeasurement> cells;
  for (const std::string& precision : o_.precisions) {
    for (int level : levels_) {
      for (const std::string& path : cell_run_paths(o_.out_dir, precision, level)) {
        CROSSPOINT_ASSIGN_OR_RETURN(auto loaded, analysis::load_cell_measurements(path, precision));
        cells.insert(cells.end(), loaded.begin(), loaded.end());
      }
    }
  }
  return cells;
}

std::vector<int> SweepRun::plan_bisection_levels() const {
  auto cells = load_merged_cells();
  if (!cells.is_ok()) return {};
  std::set<int> probes;
  std::vector<analysis::Metric> metrics(std::begin(kBisectedMetrics), std::end(kBisectedMetrics));
  // With --slo the search also locates where the most goodput within it changes hands.
  if (const auto slo = slo_of(o_)) {
    analysis::apply_slo_goodput(cells.value(), *slo);
    metrics.push_back(analysis::Metric::kGoodput);
  }
  for (analysis::Metric metric : metrics) {
    for (double level : analysis::plan_crossover_probes(cells.value(), metric, o_.bisect_resolution, 0.02)) {
      const int rounded = static_cast<int>(level + 0.5);
      if (!levels_.count(rounded)) probes.insert(rounded);
    }
  }
  return {probes.begin(), probes.end()};
}

void SweepRun::collect_levels() {
  levels_.insert(o_.concurrency.begin(), o_.concurrency.end());
  // Levels added by an earlier run's crossover search count as part of this sweep.
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(o_.out_dir + "/cells", ec)) {
    const std::string name = entry.path().filename().string();
    for (const std::string& precision : o_.precisions) {
      const std::string prefix = precision + "-c";
      if (name.rfind(prefix, 0) == 0 && name.size() > prefix.size() + 5 && name.substr(name.size() - 5) == ".json") {
        const std::string digits = name.substr(prefix.size(), name.size() - prefix.size() - 5);
        if (!digits.empty() && std::all_of(digits.begin(), digits.end(), ::isdigit) && digits.size() < 7) {
          levels_.insert(std::stoi(digits));
        }
      }
    }
  }
}

Result<SweepSummary> SweepRun::report_only() {
  if (!fs::is_regular_file(o_.out_dir + "/hwinfo.json"))
    return not_found("--report-only: " + o_.out_dir + "/hwinfo.json: no such file (not a sweep folder?)");
  collect_levels();
  size_t missing = 0;
  for (const std::string& precision : o_.precisions) {
    for (int level : levels_) {
      if (cell_is_finished(cell_result_path(o_.out_dir, precision, level))) {
        ++summary_.num_cells_reused;
      } else {
        ++missing;
        log_warning("sweep: --report-only: no finished cell {} at concurrency {}: left out of the report", precision,
                    level);
      }
    }
  }
  if (summary_.num_cells_reused == 0)
    return not_found("--report-only: " + o_.out_dir + "/cells holds no finished cell");
  log_info("sweep: --report-only: {} cells from {}, {} missing", summary_.num_cells_reused, o_.out_dir, missing);
  CROSSPOINT_ASSIGN_OR_RETURN(nlohmann::json study_json,
                              build_study_json(o_, fp16_dir_, std::vector<int>(levels_.begin(), levels_.end())));
  CROSSPOINT_RETURN_IF_ERROR(write_text_atomically(o_.out_dir + "/study.json", study_json.dump(2)));
  CROSSPOINT_RETURN_IF_ERROR(write_sweep_report(o_, fp16_dir_, study_json));
  summary_.report_md_path = o_.out_dir + "/report.md";
  summary_.report_html_path = o_.out_dir + "/report.html";
  return summary_;
}

Result<SweepSummary> SweepRun::run() {
  for (const char* sub : {"", "/cells", "/servers", "/quality", "/logs"}) {
    std::error_code ec;
    fs::create_directories(o_.out_dir + sub, ec);
    if (ec) return io_error(o_.out_dir + sub + ": cannot create: " + ec.message());
  }
  CROSSPOINT_RETURN_IF_ERROR(write_text_atomically(o_.out_dir + "/sweep.json", options_json().dump(2)));
  // lm-evaluation-harness results kept beside crosspoint eval's, so the report can be rewritten.
  for (const auto& [precision, file] : o_.harness_results) {
    std::error_code ec;
    fs::copy_file(file, harness_results_path(o_.out_dir, precision), fs::copy_options::overwrite_existing, ec);
    if (ec) return io_error(file + ": cannot copy into " + o_.out_dir + "/quality: " + ec.message());
    log_info("sweep: quality of {} from lm-evaluation-harness results {}", precision, file);
  }
  collect_levels();
  for (const std::string& precision : o_.precisions) {
    for (int level : levels_) {
      if (cell_is_finished(cell_result_path(o_.out_dir, precision, level))) {
        ++summary_.num_cells_reused;
      } else {
        ++num_cells_planned_;
      }
    }
  }
  log_info("sweep: {} precisions x {} concurrency levels: {} cells to run, {} kept from {}", o_.precisions.size(),
           levels_.size(), num_cells_planned_, summary_.num_cells_reused, o_.out_dir);

  // Measured first, with no server running, so the ceilings are the machine's own and a
  // device that cannot be measured stops the sweep before hours of runs.
  CROSSPOINT_RETURN_IF_ERROR(measure_hardware());
  for (const std::string& precision : o_.precisions) CROSSPOINT_RETURN_IF_ERROR(quantize_if_missing(precision));

  if (auto previous = read_json_file(o_.out_dir + "/budget.json"); previous && previous->is_object()) {
    prior_measure_s_ = previous->value("measure_s", 0.0);
    summary_.num_extra_runs = previous->value("extra_runs", 0);
    summary_.num_reruns = previous->value("reruns", 0);
  }
  measure_start_ = std::chrono::steady_clock::now();
  ProgressBar bar("sweep cells", num_cells_planned_ * static_cast<size_t>(o_.repeats));
  const std::vector<int> grid(levels_.begin(), levels_.end());
  for (const std::string& precision : o_.precisions) CROSSPOINT_RETURN_IF_ERROR(run_levels(precision, grid, bar));
  bar.finish();
  CROSSPOINT_RETURN_IF_ERROR(rerun_interfered_runs());
  // Quality is not measured time: the budget clock pauses for it.
  const auto quality_start = std::chrono::steady_clock::now();

  for (const std::string& precision : o_.precisions) CROSSPOINT_RETURN_IF_ERROR(evaluate_quality(precision));
  measure_start_ += std::chrono::steady_clock::now() - quality_start;
  CROSSPOINT_RETURN_IF_ERROR(grow_samples());

  // The crossover search: measure between two levels where a winner flips until the bracket
  // is narrower than the resolution (or the run budget is spent).
  for (int round = 0; summary_.num_bisection_levels < o_.max_bisect_runs && o_.precisions.size() > 1; ++round) {
    std::vector<int> probes = plan_bisection_levels();
    if (probes.empty()) break;
    const int room = o_.max_bisect_runs - summary_.num_bisection_levels;
    if (static_cast<int>(probes.size()) > room) probes.resize(static_cast<size_t>(room));
    std::string list;
    for (int p : probes) list += (list.empty() ? "" : ", ") + std::to_string(p);
    log_info("sweep: crossover search round {}: concurrency {}", round + 1, list);
    levels_.insert(probes.begin(), probes.end());
    summary_.num_bisection_levels += static_cast<int>(probes.size());
    ProgressBar probe_bar("crossover cells", probes.size() * o_.precisions.size());
    num_cells_done_ = 0;
    for (const std::string& precision : o_.precisions)
      CROSSPOINT_RETURN_IF_ERROR(run_levels(precision, probes, probe_bar));
    probe_bar.finish();
  }
  CROSSPOINT_RETURN_IF_ERROR(rerun_interfered_runs());
  CROSSPOINT_RETURN_IF_ERROR(write_budget_file());

  CROSSPOINT_ASSIGN_OR_RETURN(nlohmann::json study_json,
                              build_study_json(o_, fp16_dir_, std::vector<int>(levels_.begin(), levels_.end())));
  CROSSPOINT_RETURN_IF_ERROR(write_text_atomically(o_.out_dir + "/study.json", study_json.dump(2)));
  CROSSPOINT_RETURN_IF_ERROR(write_sweep_report(o_, fp16_dir_, study_json));
  summary_.report_md_path = o_.out_dir + "/report.md";
  summary_.report_html_path = o_.out_dir + "/report.html";
  return summary_;
}

}  // namespace

std::vector<std::string> serve_command(const SweepOptions& o, const std::string& model_dir,
                                       const std::string& kv_cache_dtype, const std::string& prefix_caching,
                                       int tensor_parallel_size) {
  std::vector<std::string> argv = {o.crosspoint_exe,      "serve", "--model",         model_dir,
                                   "--served-model-name", "sweep", "--max-model-len", std::to_string(o.max_model_len)};
  if (o.max_num_seqs > 0) argv.insert(argv.end(), {"--max-num-seqs", std::to_string(o.max_num_seqs)});
  if (kv_cache_dtype != "auto") argv.insert(argv.end(), {"--kv-cache-dtype", kv_cache_dtype});
  if (prefix_caching == "on") argv.push_back("--enable-prefix-caching");
  if (prefix_caching == "off") argv.push_back("--no-enable-prefix-caching");
  if (tensor_parallel_size > 1)
    argv.insert(argv.end(), {"--tensor-parallel-size", std::to_string(tensor_parallel_size)});
  if (o.device == "cuda") {
    // The GPU server sizes its KV cache from the memory fraction (or the budget); CPU threads do not apply.
    char fraction[32];
    std::snprintf(fraction, sizeof(fraction), "%g", o.gpu_memory_utilization);
    argv.insert(argv.end(), {"--device", "cuda"});
    if (o.memory_budget.empty()) argv.insert(argv.end(), {"--gpu-memory-utilization", fraction});
    else argv.insert(argv.end(), {"--memory-budget", o.memory_budget});
    if (o.enforce_eager) argv.push_back("--enforce-eager");
    if (o.deterministic) argv.push_back("--deterministic");
    return argv;
  }
  // Explicit, since serve's own default (auto) would take a GPU when one is visible.
  argv.insert(argv.end(), {"--device", "cpu"});
  if (o.memory_budget.empty()) argv.insert(argv.end(), {"--kv-cache-memory", o.kv_cache_memory});
  else argv.insert(argv.end(), {"--memory-budget", o.memory_budget});
  if (o.threads > 0) argv.insert(argv.end(), {"--threads", std::to_string(o.threads)});
  if (o.deterministic) argv.push_back("--deterministic");
  return argv;
}

std::vector<std::string> hwinfo_command(const SweepOptions& o) {
  std::vector<std::string> argv = {o.crosspoint_exe, "hwinfo", "--json"};
  if (o.device == "cuda") {
    argv.insert(argv.end(), {"--device", "cuda"});
    if (!o.hardware.empty()) argv.insert(argv.end(), {"--hardware", o.hardware});
    return argv;
  }
  argv.insert(argv.end(), {"--quick", "--device", "cpu"});
  if (o.threads > 0) argv.insert(argv.end(), {"--threads", std::to_string(o.threads)});
  return argv;
}

std::string cell_result_path(const std::string& out_dir, const std::string& precision, int concurrency) {
  return out_dir + "/cells/" + precision + "-c" + std::to_string(concurrency) + ".json";
}

std::string cell_run_path(const std::string& out_dir, const std::string& precision, int concurrency, int run) {
  if (run <= 1) return cell_result_path(out_dir, precision, concurrency);
  return out_dir + "/cells/" + precision + "-c" + std::to_string(concurrency) + "-r" + std::to_string(run) + ".json";
}

std::vector<std::string> cell_run_paths(const std::string& out_dir, const std::string& precision, int concurrency) {
  std::vector<std::string> paths;
  for (int run = 1; run <= 100; ++run) {
    const std::string path = cell_run_path(out_dir, precision, concurrency, run);
    if (fs::is_regular_file(path)) paths.push_back(path);
  }
  return paths;
}

std::string quantized_checkpoint_dir(const SweepOptions& options, const std::string& fp16_model_dir,
                                     const std::string& precision) {
  const std::string root = options.quant_cache_dir.empty() ? cache_dir() + "/quantized" : options.quant_cache_dir;
  std::error_code ec;
  const std::string canonical = fs::weakly_canonical(fs::path(fp16_model_dir), ec).string();
  // FNV-1a of the model path, so two models with the same folder name do not share a cache entry.
  uint64_t hash = 1469598103934665603ull;
  for (unsigned char c : canonical) hash = (hash ^ c) * 1099511628211ull;
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(hash));
  std::string name = fs::path(canonical).filename().string() + "-" + std::string(hex).substr(0, 8) + "-" + precision;
  if (precision == "w4a16" && options.quant_method != "gptq") name += "-" + options.quant_method;
  return root + "/" + name;
}

Result<SweepSummary> run_sweep(const SweepOptions& options) {
  CROSSPOINT_RETURN_IF_ERROR(validate_sweep_options(options));
  if (options.report_only) {
    // The device of the cells in --out, as given: nothing runs, so none needs to be here.
    if (options.device == "auto")
      return invalid_argument("--report-only needs --device cpu or cuda: the cells' device");
    CROSSPOINT_ASSIGN_OR_RETURN(std::string fp16_dir, resolve_model_dir(options.model));
    SweepOptions labelled = options;
    labelled.precisions = served_labels(options.precisions, options.kv_cache_dtypes, options.prefix_caching,
                                        options.tensor_parallel_sizes);
    SweepRun run(labelled, fp16_dir);
    return run.report_only();
  }
  // auto -> cuda or cpu once, here: every child (serve, hwinfo) gets the device explicitly.
  SweepOptions resolved = options;
  // From here on every precision is a served label: each weight precision with each KV dtype.
  resolved.precisions =
      served_labels(options.precisions, options.kv_cache_dtypes, options.prefix_caching, options.tensor_parallel_sizes);
  std::string why_device;
  CROSSPOINT_ASSIGN_OR_RETURN(resolved.device, analysis::resolve_device(options.device, &why_device));
  if (resolved.time_budget_s < 0) resolved.time_budget_s = resolved.device == "cuda" ? 0 : kDefaultCpuTimeBudgetS;
  CROSSPOINT_ASSIGN_OR_RETURN(std::string fp16_dir, resolve_model_dir(resolved.model));
  if (options.dataset == "sharegpt" && options.dataset_path.empty() &&
      !fs::is_regular_file(bench::default_sharegpt_path())) {
    return not_found("--dataset sharegpt: " + bench::default_sharegpt_path() +
                     ": no such file (run scripts/setup.sh, or give --dataset-path)");
  }
  log_info("sweep: servers on {} ({})", resolved.device, why_device);
  SweepRun run(resolved, fp16_dir);
  return run.run();
}

}  // namespace crosspoint::sweep
