// crosspoint sweep: the study in one command. For each precision a quantised checkpoint is
// made (and cached) from the FP16 model, `crosspoint serve` is started as a child process,
// `crosspoint bench serve` runs at every concurrency level, the quality is measured with
// `crosspoint eval`, extra levels locate the crossovers, and report.md / report.html are
// written. Finished cells are kept, so running the same command again resumes.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <algorithm>
#include <string>
#include <vector>

#include "cli/cli_util.h"
#include "cli/commands.h"
#include "common/clock.h"
#include "common/progress_bar.h"
#include "sweep/harness_quality.h"
#include "sweep/sweep_runner.h"

namespace crosspoint::cli {
namespace {

// "auto,fp8" -> {"auto", "fp8"}; empty items kept (the options' checks name them).
std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> items;
  for (size_t start = 0; start <= text.size();) {
    const size_t comma = std::min(text.find(',', start), text.size());
    items.push_back(text.substr(start, comma - start));
    start = comma + 1;
  }
  return items;
}

}  // namespace

int run_sweep(int argc, char** argv) {
  CLI::App app(
      "Serve the model at each precision, bench it at each concurrency, measure quality, locate the crossover and "
      "write report.md + report.html.\n"
      "The defaults finish in a few minutes on a 2-core CPU with the default model (8 prompts per cell, 16 output "
      "tokens, concurrency 1,4,8). The study's own settings:\n"
      "  crosspoint sweep --model DIR --precisions fp16,w8a8-fp8,w4a16 --concurrency 1,10,100 --num-prompts 1000 "
      "--output-len 0 --slo ttft:500,tpot:50 --eval-samples 32 --max-model-len 4096\n"
      "On a GPU with ready checkpoints (scripts/gpu_study.py):\n"
      "  crosspoint sweep --device cuda --ceilings ceilings.json --model FP16DIR --precision-model w8a8-fp8=DIR "
      "--precision-model w4a16=DIR --concurrency 1,10,100 --num-prompts 20,100,200 --output-len 0 --ignore-eos "
      "--eval-samples 0 --max-model-len 4096",
      "crosspoint sweep");
  sweep::SweepOptions o;
  std::string precisions_text = "fp16,w8a8-fp8,w4a16", concurrency_text = "1,4,8", slo_text, num_prompts_text = "8";
  std::vector<std::string> precision_model_texts;
  std::vector<std::string> harness_results_texts;
  app.add_option("--engine", o.engine,
                 "server studied: crosspoint, vllm (vllm serve), sglang (python -m sglang.launch_server) on the same "
                 "checkpoints, or llama.cpp (llama-cpp-python's OpenAI server on F16/Q8_0/Q4_0 GGUFs)")
      ->capture_default_str();
  app.add_option("--engine-exe", o.engine_exe,
                 "--engine vllm: the vllm executable (default: vllm on PATH); --engine sglang: the Python with "
                 "sglang (default: python3)");
  app.add_option("--serve-cmd", o.serve_cmd,
                 "any OpenAI-compatible server: a /bin/sh command template with {model} {port} {host} {precision} "
                 "(models from --model for fp16 and --precision-model); ready when GET /v1/models answers 200");
  app.add_option("--python", o.python, "--engine llama.cpp: Python with llama_cpp (default: the cache's venv)");
  app.add_option("--gguf", o.gguf,
                 "--engine llama.cpp: a GGUF of --model (F16 best) that every format is made from by llama.cpp's "
                 "quantiser (default: the default model's released Q4_1 GGUF)");
  app.add_option("--model", o.model, "FP16 model directory, or 'default' (SmolLM2-135M-Instruct)")
      ->capture_default_str();
  app.add_option("--precisions", precisions_text, "comma-separated: fp16, w8a8-fp8, w8a8-int8, w4a16")
      ->capture_default_str();
  app.add_option("--concurrency", concurrency_text, "comma-separated client concurrency levels")->capture_default_str();
  app.add_option("--num-prompts", num_prompts_text,
                 "requests per cell: one number, or one per --concurrency level in its order (e.g. 20,100,200)")
      ->capture_default_str();
  app.add_option("--dataset", o.dataset,
                 "sharegpt, random or prefix_repetition (shared prefixes: --prefix-len, --suffix-len, --num-prefixes)")
      ->capture_default_str();
  app.add_option("--dataset-path", o.dataset_path, "ShareGPT JSON file (default: the copy in the cache)");
  app.add_option("--output-len", o.output_len,
                 "output tokens per request (bench --sharegpt-output-len); 0 = the dataset's reply lengths")
      ->capture_default_str();
  app.add_option("--device", o.device,
                 "auto, cpu or cuda: where each `crosspoint serve` child runs (auto = cuda when a GPU is visible)")
      ->capture_default_str();
  app.add_option("--gpu-memory-utilization", o.gpu_memory_utilization,
                 "cuda: fraction of GPU memory each server may use (serve --gpu-memory-utilization)")
      ->capture_default_str();
  app.add_option("--memory-budget", o.memory_budget,
                 "serve --memory-budget on every server: bytes for weights + activations + KV cache, e.g. 24GB to "
                 "study a 24 GB GPU's capacity on a larger one (replaces --gpu-memory-utilization and "
                 "--kv-cache-memory; the report's title names it)");
  app.add_flag("--enforce-eager", o.enforce_eager, "cuda: serve without CUDA graphs (serve --enforce-eager)");
  app.add_flag("--deterministic", o.deterministic,
               "serve --deterministic: batch-invariant servers (each request's output independent of its batch); "
               "the report says which mode it ran in");
  app.add_option("--ceilings", o.ceilings_path,
                 "measured ceilings for the roofline: shared/tools/gpu/ceilings.py's JSON or crosspoint hwinfo --json "
                 "(default: crosspoint hwinfo of the device, measured at the start)");
  app.add_option("--hardware", o.hardware,
                 "cuda without --ceilings: datasheet entry used when the GPU cannot be measured (hwinfo --list)");
  app.add_option("--precision-model", precision_model_texts,
                 "PRECISION=DIR (repeatable): serve this ready checkpoint for the precision instead of quantising "
                 "--model (e.g. w4a16=/models/qwen-gptq)");
  app.add_option("--harness-results", harness_results_texts,
                 "PRECISION=FILE (repeatable): lm-evaluation-harness results of that precision served (its "
                 "--output_path JSON, or scripts/eval/lm_eval_served.sh's); the report lists its scores beside "
                 "crosspoint eval's");
  app.add_flag("--ignore-eos", o.ignore_eos, "bench --ignore-eos: every reply runs to its length (random weights)");
  app.add_option("--random-input-len", o.random_input_len, "--dataset random: prompt tokens (0: bench's default)")
      ->capture_default_str();
  app.add_option("--slo", slo_text, "goodput SLO in ms, e.g. ttft:500,tpot:50; also drives the recommendation");
  app.add_option("--bisect-resolution", o.bisect_resolution,
                 "stop locating a crossover once its bracket is this many concurrency levels wide")
      ->capture_default_str();
  app.add_option("--max-bisect-runs", o.max_bisect_runs, "extra concurrency levels at most (0: no crossover search)")
      ->capture_default_str();
  app.add_option("--out", o.out_dir, "output directory (finished cells in it are kept and skipped)")
      ->capture_default_str();
  app.add_option("--quant-cache", o.quant_cache_dir,
                 "where quantised checkpoints are cached (default: <cache>/quantized)");
  app.add_option("--quant-method", o.quant_method, "w4a16: gptq or rtn")->capture_default_str();
  app.add_option("--quant-calib-samples", o.quant_calib_samples, "gptq calibration samples")->capture_default_str();
  app.add_option("--eval-samples", o.eval_samples, "crosspoint eval samples per quantised precision (0: skip)")
      ->capture_default_str();
  app.add_option("--eval-max-tokens", o.eval_max_tokens, "tokens per eval sample")->capture_default_str();
  app.add_option("--kv-cache-memory", o.kv_cache_memory, "serve --kv-cache-memory")->capture_default_str();
  app.add_option("--max-model-len", o.max_model_len, "serve --max-model-len")->capture_default_str();
  std::string kv_dtypes_text = "auto";
  app.add_option("--kv-cache-dtypes", kv_dtypes_text,
                 "comma-separated KV cache dtypes to serve every precision with: auto (the device's own) and/or fp8 "
                 "(serve --kv-cache-dtype fp8; cells labelled e.g. w4a16+kv-fp8)")
      ->capture_default_str();
  std::string prefix_caching_text = "default";
  app.add_option("--prefix-caching", prefix_caching_text,
                 "comma-separated prefix caching modes to serve every precision with: on (serve "
                 "--enable-prefix-caching) and/or off (--no-enable-prefix-caching), cells labelled e.g. "
                 "w4a16+prefix-cache; default: the server's own, no axis. Pair it with --dataset prefix_repetition")
      ->capture_default_str();
  std::string tensor_parallel_text = "1";
  app.add_option("--tensor-parallel-sizes", tensor_parallel_text,
                 "comma-separated rank counts to split every precision over (serve --tensor-parallel-size; cells "
                 "labelled e.g. fp16-tp2): on --device cpu ranks that are threads, on --device cuda one GPU a rank")
      ->capture_default_str();
  app.add_option("--prefix-len", o.prefix_len, "--dataset prefix_repetition: tokens of each shared prefix")
      ->capture_default_str();
  app.add_option("--suffix-len", o.suffix_len, "--dataset prefix_repetition: tokens of each prompt's own suffix")
      ->capture_default_str();
  app.add_option("--num-prefixes", o.num_prefixes, "--dataset prefix_repetition: distinct prefixes the prompts share")
      ->capture_default_str();
  app.add_flag("--report-only", o.report_only,
               "write study.json and the report from the finished cells in --out, measuring nothing (a sweep cut "
               "short, or a report redone by a newer crosspoint); give the sweep's own options, --device cpu or cuda "
               "and a --model whose config.json has the served model's shape");
  app.add_option("--max-num-seqs", o.max_num_seqs,
                 "serve --max-num-seqs: sequences per engine step (0: serve's default); raise it past the highest "
                 "concurrency for a run where only the KV cache may bound the batch")
      ->capture_default_str();
  app.add_option("--threads", o.threads, "threads of every child (0: all cores)")->capture_default_str();
  app.add_option("--server-start-timeout", o.server_start_timeout_s, "seconds to wait for a server's /health")
      ->capture_default_str();
  app.add_option("--repeats", o.repeats,
                 "bench runs per cell to start with (run k samples its prompts with seed k-1; latencies pool the "
                 "runs' requests, throughput's interval comes from the runs)")
      ->capture_default_str();
  o.time_budget_s = -1;
  app.add_option("--time-budget", o.time_budget_s,
                 "seconds for measuring cells (not quantising, ceilings or quality; earlier runs on the same --out "
                 "count); while the two best precisions of median TPOT or output throughput overlap at a level and "
                 "time is left, both cells get another run. 0: no extra runs; default 300 on the CPU, 0 with --device "
                 "cuda");
  app.add_option("--max-runs-per-cell", o.max_runs_per_cell, "extra runs stop at this many runs of one cell")
      ->capture_default_str();
  app.add_option("--rerun-interfered", o.rerun_interfered,
                 "re-measure runs the busy-machine guard marked (others' CPU use or load while they ran), up to N "
                 "times")
      ->capture_default_str();
  if (int code = parse_or_exit_code(app, argc, argv); code >= 0) return code;

  auto precisions = sweep::parse_precision_list(precisions_text);
  if (!precisions.is_ok()) return report_error("sweep", precisions.status());
  o.precisions = precisions.value();
  o.kv_cache_dtypes = split_commas(kv_dtypes_text);
  o.prefix_caching = split_commas(prefix_caching_text);
  o.tensor_parallel_sizes.clear();
  for (const std::string& size : split_commas(tensor_parallel_text)) {
    char* end = nullptr;
    const long value = std::strtol(size.c_str(), &end, 10);
    if (size.empty() || *end != '\0' || value < 1 || value > 1024)
      return report_error("sweep", invalid_argument("--tensor-parallel-sizes: '" + size + "' is not a rank count"));
    o.tensor_parallel_sizes.push_back(static_cast<int>(value));
  }
  auto levels = sweep::parse_concurrency_list(concurrency_text);
  if (!levels.is_ok()) return report_error("sweep", levels.status());
  o.concurrency = levels.value();
  if (Status s = sweep::parse_num_prompts(num_prompts_text, concurrency_text, o); !s.is_ok()) {
    return report_error("sweep", s);
  }
  for (const std::string& text : precision_model_texts) {
    if (Status s = sweep::parse_precision_model(text, o); !s.is_ok()) return report_error("sweep", s);
  }
  for (const std::string& text : harness_results_texts) {
    if (Status s = sweep::parse_harness_results(text, o.precisions, o.harness_results); !s.is_ok())
      return report_error("sweep", s);
  }
  if (!slo_text.empty()) {
    if (Status s = sweep::parse_slo(slo_text, o); !s.is_ok()) return report_error("sweep", s);
  }
  std::error_code ec;
  o.crosspoint_exe = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  if (ec) return report_error("sweep", internal_error("cannot find this executable: " + ec.message()));

  Stopwatch clock;
  auto summary = sweep::run_sweep(o);
  if (!summary.is_ok()) return report_error("sweep", summary.status());
  std::printf("sweep done in %s: %d cells run, %d kept, %d crossover levels added\n",
              format_duration(clock.elapsed_seconds()).c_str(), summary->num_cells_run, summary->num_cells_reused,
              summary->num_bisection_levels);
  std::printf(
      "  sample: %d extra run(s) for undecided comparisons, measuring took %s (this --out, all calls)%s\n",
      summary->num_extra_runs, format_duration(summary->measure_s).c_str(),
      summary->time_budget_s > 0 ? (" of a " + format_duration(summary->time_budget_s) + " budget").c_str() : "");
  if (summary->undecided.empty()) {
    std::printf("  every compared level of median TPOT and output throughput is separable or a tie\n");
  } else {
    const std::string why = summary->runs_capped
                                ? "their cells reached --max-runs-per-cell before the intervals separated"
                            : summary->budget_too_small ? "the time budget was too small to decide"
                                                        : "no time budget to decide (--time-budget)";
    std::printf("  %s: %zu comparison(s) not separable at this sample size:\n", why.c_str(), summary->undecided.size());
    for (const std::string& u : summary->undecided) std::printf("    %s\n", u.c_str());
  }
  if (summary->num_interfered_cells > 0 || summary->num_reruns > 0) {
    std::printf("  busy-machine guard: %d cell(s) measured under interference (%d run(s) re-measured)\n",
                summary->num_interfered_cells, summary->num_reruns);
  }
  std::printf("  %s\n  %s\n", summary->report_md_path.c_str(), summary->report_html_path.c_str());
  return 0;
}

}  // namespace crosspoint::cli
