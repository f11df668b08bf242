// crosspoint serve: the OpenAI-compatible server (server/) in front of the engine (engine/)
// with the model on the CPU or, with --device cuda, on the GPU (CudaModelRunner). Prints what
// the engine was given: weights, KV cache size in GiB and tokens, the worst-case and the
// workload-based capacity, and the start-up time (for cuda also the GPU, the measured
// activation peak and the CUDA graph buckets).
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <string>

#include <fmt/ranges.h>

#include "analysis/gpu_ceilings.h"
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/paths.h"
#include "common/thread_pool.h"
#include "engine/engine.h"
#include "model/model.h"
#include "quant/gptq_linear_weight.h"
#include "runner/cpu_model_runner.h"
#include "scheduler/block_manager.h"
#include "server/openai_server.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"
#ifdef CROSSPOINT_HAVE_CUDA
#include "model/cuda/cuda_model.h"
#include "runner/cuda/cuda_model_runner.h"
#endif

namespace crosspoint::cli {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// "1GiB", "512MiB", "2MB", "1e9", "4096" -> bytes.
Result<size_t> parse_bytes(const std::string& text) {
  size_t split = 0;
  while (split < text.size() && (std::isdigit(static_cast<unsigned char>(text[split])) || text[split] == '.' ||
                                 text[split] == 'e' || text[split] == 'E')) {
    ++split;
  }
  double value = 0;
  try {
    value = std::stod(text.substr(0, split));
  } catch (...) {
    return invalid_argument("--kv-cache-memory: '" + text + "' is not a size (e.g. 1GiB, 512MiB)");
  }
  std::string unit = text.substr(split);
  std::transform(unit.begin(), unit.end(), unit.begin(), [](unsigned char c) { return std::tolower(c); });
  double scale = 0;
  if (unit.empty() || unit == "b") scale = 1;
  else if (unit == "kib" || unit == "k") scale = 1024.0;
  else if (unit == "mib" || unit == "m") scale = 1024.0 * 1024;
  else if (unit == "gib" || unit == "g") scale = kGiB;
  else if (unit == "kb") scale = 1e3;
  else if (unit == "mb") scale = 1e6;
  else if (unit == "gb") scale = 1e9;
  if (scale == 0 || !(value > 0) || !std::isfinite(value)) {
    return invalid_argument("--kv-cache-memory: '" + text + "' is not a positive size (e.g. 1GiB, 512MiB)");
  }
  return static_cast<size_t>(value * scale);
}

struct ServeOptions {
  std::string model = "default";
  std::string host = "127.0.0.1";
  int port = 8000;
  std::string served_model_name;
  int64_t max_model_len = 0;  // 0 = the model's max_position_embeddings
  std::string api_key;
  int max_num_seqs = 256;
  int max_num_batched_tokens = 2048;
  std::string kv_cache_memory = "1GiB";
  int block_size = 16;
  int max_waiting = 1024;
  int threads = 0;
  double mean_tokens_per_request = 438;  // ShareGPT V3 mean prompt + output (docs/STUDY.md)
  std::string device = "auto";           // auto (cuda when a GPU is visible) | cpu | cuda
  double gpu_memory_utilization = 0.9;   // cuda: fraction of the GPU's memory this process may use
  bool enforce_eager = false;            // cuda: no CUDA graphs
  bool sample_on_host = false;           // cuda: sampled rows drawn by the host sampler (default: on the GPU)
  bool deterministic = false;            // batch-invariant: a request's output independent of the rest of the batch
};

// What the start-up log says about reproducibility (docs/serving.md, "Determinism").
std::string determinism_note(const std::string& device, bool deterministic) {
  if (device == "cpu") {
    return std::string("determinism: outputs are bit-identical run to run and independent of the batch (the CPU "
                       "kernels reduce each row in one fixed order)") +
           (deterministic ? "; --deterministic changes nothing here" : "");
  }
  return deterministic ? "determinism: --deterministic: linears on fixed slabs of 64 rows and attention in one "
                         "partition per row, so a request's output does not depend on the rest of its batch (slower; "
                         "docs/serving.md)"
                       : "determinism: outputs are bit-identical run to run for the same batch; they may change with "
                         "what else is in the batch (--deterministic makes them batch-invariant)";
}

// Device memory kept free after the KV cache for the decode graphs captured afterwards.
constexpr size_t kGraphReserveBytes = size_t{256} << 20;

// The engine's runner and KV size for one device, with the startup log lines that go with it.
struct DeviceRunner {
  std::unique_ptr<Runner> runner;
  int32_t num_blocks = 0;
};

#ifdef CROSSPOINT_HAVE_CUDA
Result<DeviceRunner> make_cuda_runner(const ServeOptions& o, const Model& m, int64_t max_model_len) {
  cuda::CudaModelOptions options;
  options.max_num_tokens = o.max_num_batched_tokens;
  options.max_num_seqs = o.max_num_seqs;
  options.max_model_len = static_cast<int32_t>(max_model_len);
  options.block_size = o.block_size;
  options.gpu_memory_utilization = o.gpu_memory_utilization;
  options.reserve_bytes = o.enforce_eager ? 0 : kGraphReserveBytes;
  options.batch_invariant = o.deterministic;
  CROSSPOINT_ASSIGN_OR_RETURN(auto model, cuda::CudaModel::create(m, options));
  const cuda::CudaMemoryReport mem = model->memory();
  log_info("GPU: {} ({:.1f} GiB); weights on the GPU {:.3f} GiB ({}), converted and uploaded in {:.2f} s", mem.gpu_name,
           mem.total_bytes / kGiB, mem.weight_bytes / kGiB, model->weight_format_name(), mem.upload_s);
  log_info("activations and workspaces for {} tokens per step: {:.3f} GiB (measured by a profile step, {:.2f} s); "
           "{:.3f} GiB in use before the KV cache",
           o.max_num_batched_tokens, mem.activation_bytes / kGiB, mem.profile_s, mem.used_before_kv_bytes / kGiB);
  const int64_t eager_tokens =
      mem.kv_tokens + static_cast<int64_t>(mem.reserve_bytes / (mem.kv_bytes_per_token * o.block_size)) * o.block_size;
  log_info("KV cache: {:.3f} GiB (fp16) = {} tokens in {} blocks of {} (--gpu-memory-utilization {}{})", mem.kv_bytes / kGiB,
           mem.kv_tokens, mem.num_kv_blocks, o.block_size, o.gpu_memory_utilization,
           o.enforce_eager ? ", eager" : fmt::format("; {:.2f} GiB kept for CUDA graphs, {} tokens with --enforce-eager",
                                                     mem.reserve_bytes / kGiB, eager_tokens));
  cuda::CudaRunnerOptions runner_options;
  runner_options.enforce_eager = o.enforce_eager;
  runner_options.sample_on_gpu = !o.sample_on_host;
  CROSSPOINT_ASSIGN_OR_RETURN(auto runner, cuda::CudaModelRunner::create(std::move(model), runner_options));
  const cuda::CudaGraphReport& graphs = runner->graph_report();
  if (o.enforce_eager) {
    log_info("CUDA graphs: off (--enforce-eager)");
  } else if (!graphs.fallback_reason.empty()) {
    log_info("CUDA graphs: capture failed, running eagerly: {}", graphs.fallback_reason);
  } else {
    log_info("CUDA graphs: {} decode batch sizes captured [{}] x context bounds [{}] in {:.2f} s, {:.3f} GiB",
             graphs.captured_buckets.size(), fmt::join(graphs.captured_buckets, ", "),
             fmt::join(graphs.context_bounds, ", "), graphs.capture_s, graphs.graph_bytes / kGiB);
  }
  DeviceRunner out;
  out.num_blocks = static_cast<int32_t>(mem.num_kv_blocks);
  out.runner = std::move(runner);
  return out;
}
#endif

int serve(const ServeOptions& o) {
  Stopwatch startup;
  if (o.threads > 0) set_global_num_threads(o.threads);
  std::string why_device;
  auto device = analysis::resolve_device(o.device, &why_device);
  if (!device.is_ok()) return report_error("serve", device.status());
  log_info("device: {} ({})", device.value(), why_device);
  auto dir = resolve_model_dir(o.model);
  if (!dir.is_ok()) return report_error("serve", dir.status());
  Stopwatch load_timer;
  ModelLoadOptions load_options;
  load_options.linear_formats = quantized_linear_weight_formats();  // W8A8-FP8 and W4A16 checkpoints too
  auto model = Model::load(dir.value(), load_options);
  if (!model.is_ok()) return report_error("serve", model.status());
  const double load_s = load_timer.elapsed_seconds();
  auto tokenizer = Tokenizer::from_model_dir(dir.value());
  if (!tokenizer.is_ok()) return report_error("serve", tokenizer.status());
  const Model& m = *model.value();
  log_info("model {} ({}): weights {:.3f} GiB, loaded in {:.2f} s", dir.value(), m.weight_format_name(),
           m.weight_bytes_total() / kGiB, load_s);

  const int64_t max_model_len = o.max_model_len > 0 ? o.max_model_len : m.config().max_position_embeddings;
  if (max_model_len <= 1 || max_model_len > (1 << 30)) {
    return report_error("serve", invalid_argument("--max-model-len must be between 2 and 2^30, got " +
                                                  std::to_string(max_model_len)));
  }
  if (o.block_size < 1 || o.block_size > 1024 || o.max_num_seqs < 1 || o.max_num_batched_tokens < 1 ||
      o.max_waiting < 0 || o.mean_tokens_per_request <= 0) {
    return report_error("serve", invalid_argument("--block-size (1..1024), --max-num-seqs, --max-num-batched-tokens "
                                                  "and --mean-tokens-per-request must be positive"));
  }
  log_info("{}", determinism_note(device.value(), o.deterministic));
  DeviceRunner device_runner;
  if (device.value() == "cuda") {
#ifdef CROSSPOINT_HAVE_CUDA
    auto made = make_cuda_runner(o, m, max_model_len);
    if (!made.is_ok()) return report_error("serve", made.status());
    device_runner = std::move(made).value();
#endif
  } else {
    auto kv_bytes = parse_bytes(o.kv_cache_memory);
    if (!kv_bytes.is_ok()) return report_error("serve", kv_bytes.status());
    device_runner.num_blocks = BlockManager::num_blocks_for_budget(kv_bytes.value(), m.kv_bytes_per_token(), o.block_size);
    const int64_t cpu_kv_tokens = static_cast<int64_t>(device_runner.num_blocks) * o.block_size;
    // Checked before the cache is allocated (a cache of zero blocks is a programmer error there).
    if (cpu_kv_tokens < max_model_len) {
      return report_error("serve", invalid_argument(
          "the KV cache (" + o.kv_cache_memory + " = " + std::to_string(cpu_kv_tokens) +
          " tokens) cannot hold one sequence of --max-model-len " + std::to_string(max_model_len) +
          " tokens: raise --kv-cache-memory or lower --max-model-len"));
    }
    const KvCacheShape kv_shape = m.kv_cache_shape(device_runner.num_blocks, o.block_size);
    const double kv_gib = static_cast<double>(cpu_kv_tokens) * m.kv_bytes_per_token() / kGiB;
    log_info("KV cache: {:.3f} GiB (f32) = {} tokens in {} blocks of {}", kv_gib, cpu_kv_tokens, device_runner.num_blocks,
             o.block_size);
    const Model* model_ptr = model.value().get();
    device_runner.runner = std::make_unique<CpuModelRunner>(
        kv_shape, m.vocab_size(),
        [model_ptr](const ForwardBatch& batch, CpuKvCache& kv, float* logits) { return model_ptr->forward(batch, kv, logits); });
  }
  const int32_t num_blocks = device_runner.num_blocks;
  const int64_t kv_tokens = static_cast<int64_t>(num_blocks) * o.block_size;
  if (kv_tokens < max_model_len) {  // cuda (the cpu branch checked before allocating)
    return report_error("serve", invalid_argument(
        "the KV cache (--gpu-memory-utilization " + fmt::format("{}", o.gpu_memory_utilization) + " = " +
        std::to_string(kv_tokens) + " tokens) cannot hold one sequence of --max-model-len " +
        std::to_string(max_model_len) + " tokens: raise --gpu-memory-utilization or lower --max-model-len"));
  }
  log_info("Maximum concurrency for {} tokens per request (worst case: every request at max-model-len): {:.2f}x",
           max_model_len, static_cast<double>(kv_tokens) / max_model_len);
  log_info("Workload-based capacity at {:.0f} tokens per request (--mean-tokens-per-request; ShareGPT mean 438): "
           "~{:.0f} concurrent requests (blocks are allocated as tokens arrive, not max-model-len up front)",
           o.mean_tokens_per_request, static_cast<double>(kv_tokens) / o.mean_tokens_per_request);

  EngineConfig engine_config;
  engine_config.scheduler.max_num_seqs = o.max_num_seqs;
  engine_config.scheduler.max_num_batched_tokens = o.max_num_batched_tokens;
  engine_config.scheduler.max_model_len = static_cast<int32_t>(max_model_len);
  engine_config.scheduler.num_blocks = num_blocks;
  engine_config.scheduler.block_size = o.block_size;
  engine_config.max_waiting = o.max_waiting;
  engine_config.eos_token_ids = tokenizer.value()->eos_token_ids();
  for (int64_t id : m.config().eos_token_ids) {
    if (std::find(engine_config.eos_token_ids.begin(), engine_config.eos_token_ids.end(), id) ==
        engine_config.eos_token_ids.end()) {
      engine_config.eos_token_ids.push_back(static_cast<int32_t>(id));
    }
  }
  Engine engine(engine_config, std::move(device_runner.runner));

  ServerConfig server_config;
  server_config.host = o.host;
  server_config.port = o.port;
  server_config.served_model_name = o.served_model_name.empty() ? o.model : o.served_model_name;
  server_config.model_root = dir.value();
  server_config.api_key = o.api_key;
  OpenAiServer server(server_config, engine, *tokenizer.value(), chat_template_for_model_dir(dir.value()));
  if (Status s = server.bind(); !s.is_ok()) return report_error("serve", s);
  log_info("engine: device {}, max-num-seqs {}, max-num-batched-tokens {}, max-model-len {}, max-waiting {}, {} threads",
           device.value(), o.max_num_seqs, o.max_num_batched_tokens, max_model_len, o.max_waiting,
           global_thread_pool().num_threads());
  log_info("start-up took {:.2f} s (load {:.2f} s); serving '{}' on http://{}:{}/v1", startup.elapsed_seconds(), load_s,
           server_config.served_model_name, o.host, server.port());
  if (Status s = server.run(); !s.is_ok()) return report_error("serve", s);
  log_info("server stopped");
  return 0;
}

}  // namespace

int run_serve(int argc, char** argv) {
  ServeOptions o;
  CLI::App app{"OpenAI-compatible streaming server with continuous batching (CPU or CUDA)", "crosspoint serve"};
  app.add_option("--model", o.model, "model directory, or 'default' (SmolLM2-135M-Instruct)");
  app.add_option("--host", o.host, "address to listen on");
  app.add_option("--port", o.port, "port to listen on")->check(CLI::Range(0, 65535));
  app.add_option("--served-model-name", o.served_model_name, "model name clients use (default: the --model value)");
  app.add_option("--max-model-len", o.max_model_len, "prompt + output tokens per request (default: the model's)");
  app.add_option("--api-key", o.api_key, "require 'Authorization: Bearer KEY' on /v1/*");
  app.add_option("--max-num-seqs", o.max_num_seqs, "sequences per engine step");
  app.add_option("--max-num-batched-tokens", o.max_num_batched_tokens, "tokens per engine step (prefill chunks + decodes)");
  app.add_option("--kv-cache-memory", o.kv_cache_memory, "cpu: memory for the paged KV cache (e.g. 1GiB, 512MiB)");
  app.add_option("--device", o.device, "auto (cuda when a GPU is visible, else cpu), cpu or cuda")->capture_default_str();
  app.add_option("--gpu-memory-utilization", o.gpu_memory_utilization,
                 "cuda: fraction of the GPU's total memory for weights, activations and the KV cache")
      ->check(CLI::Range(0.01, 1.0));
  app.add_flag("--enforce-eager", o.enforce_eager, "cuda: no CUDA graphs for decode steps");
  app.add_flag("--deterministic", o.deterministic,
               "batch-invariant outputs: a request's tokens and logprobs do not depend on what else runs in its batch "
               "(cuda: fixed-shape kernels, slower; cpu: always so)");
  app.add_flag("--sample-on-host", o.sample_on_host,
               "cuda: draw temperature > 0 requests with the CPU runner's sampler (their f32 logits are copied out): "
               "a seed then gives the CPU's tokens. Default: drawn on the GPU, only token ids come back (same "
               "distribution, other tokens per seed)");
  app.add_option("--block-size", o.block_size, "tokens per KV block");
  app.add_option("--max-waiting", o.max_waiting, "queued requests before new ones get 503 (0 = no limit)");
  app.add_option("--threads", o.threads, "CPU threads for the model (default: all)");
  app.add_option("--mean-tokens-per-request", o.mean_tokens_per_request,
                 "mean prompt + output tokens of the expected workload, for the capacity line");
  if (int code = parse_or_exit_code(app, argc, argv); code >= 0) return code;
  return serve(o);
}

}  // namespace crosspoint::cli
