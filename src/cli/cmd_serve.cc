// crosspoint serve: the OpenAI-compatible server (server/) in front of the engine (engine/)
// with the model on the CPU or, with --device cuda, on the GPU (CudaModelRunner). Prints what
// the engine was given: weights, KV cache size in GiB and tokens, the worst-case and the
// workload-based capacity, and the start-up time (for cuda also the GPU, the measured
// activation peak and the CUDA graph buckets).
#include <algorithm>
#include <sys/resource.h>
#include <string>

#include "analysis/gpu_ceilings.h"
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "cli/device_runner.h"
#include "cli/vllm_config_file.h"
#include "cli/vllm_serve_flags.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/paths.h"
#include "common/thread_pool.h"
#include "engine/engine.h"
#include "model/model.h"
#include "quant/gptq_linear_weight.h"
#include "server/http_server.h"
#include "server/openai_server.h"
#include "server/generation_defaults.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace crosspoint::cli {
namespace {

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
  std::string kv_cache_dtype = "auto";
  std::string dtype = "auto";
  int block_size = 16;
  int max_waiting = 1024;
  int threads = 0;
  double mean_tokens_per_request = 438;    // ShareGPT V3 mean prompt + output (docs/STUDY.md)
  std::string device = "auto";             // auto (cuda when a GPU is visible) | cpu | cuda
  double gpu_memory_utilization = 0.9;     // cuda: fraction of the GPU's memory this process may use
  std::string memory_budget;               // both: bytes for weights + activations + KV cache (empty: off)
  int32_t num_kv_blocks = 0;               // --num-gpu-blocks-override: exactly this many KV blocks (0: off)
  bool enable_prefix_caching = false;      // --enable-prefix-caching given
  bool disable_prefix_caching = false;     // --no-enable-prefix-caching given
  bool enforce_eager = false;              // cuda: no CUDA graphs
  bool sample_on_host = false;             // cuda: sampled rows drawn by the host sampler (default: on the GPU)
  bool deterministic = false;              // batch-invariant: a request's output independent of the rest of the batch
  std::string generation_config = "auto";  // vLLM's --generation-config: auto | vllm | DIR
  std::string override_generation_config;  // vLLM's --override-generation-config: a JSON object
  std::string chat_template;               // vLLM's --chat-template: a file or the template itself
  VllmServeFlags vllm;                     // the other `vllm serve` flags (vllm_serve_flags.h)
  // HTTP limits (docs/serving.md, "Limits, authentication and shutdown").
  int max_connections = 4096;
  double header_timeout_s = 10;
  double body_timeout_s = 60;
  double idle_timeout_s = 60;
  int64_t max_body_bytes = 8 << 20;
  int64_t max_header_bytes = 64 << 10;
  double shutdown_timeout_s = 30;
};

// Open files the limits need: every connection is a descriptor. Raises the soft limit toward
// the hard one, and says so when even that is too low (accept() then fails with EMFILE, which
// the server survives: it pauses accepting and logs it rarely).
void ensure_descriptors(int max_connections) {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return;
  const rlim_t wanted = static_cast<rlim_t>(max_connections) + HttpServer::kReserveConnections + 256;
  if (limit.rlim_cur >= wanted) return;
  rlimit raised = limit;
  raised.rlim_cur = limit.rlim_max == RLIM_INFINITY ? wanted : std::min(wanted, limit.rlim_max);
  if (setrlimit(RLIMIT_NOFILE, &raised) == 0) limit = raised;
  if (limit.rlim_cur < wanted) {
    log_warning(
        "open files are limited to {} (ulimit -n), fewer than --max-connections {} needs ({}): connections "
        "beyond it wait in the listen queue",
        static_cast<uint64_t>(limit.rlim_cur), max_connections, static_cast<uint64_t>(wanted));
  }
}

// --quantization names the checkpoint's own method (vLLM's names), or nothing.
Status check_quantization_flag(const std::string& method, const std::string& weight_format) {
  if (method.empty()) return Status::ok();
  const bool fp8 = weight_format.rfind("w8a8-fp8", 0) == 0, int4 = weight_format.rfind("w4a16", 0) == 0;
  if ((fp8 && (method == "fp8" || method == "compressed-tensors")) ||
      (int4 && (method == "gptq" || method == "gptq_marlin")))
    return Status::ok();
  return unsupported("--quantization " + method + ": the checkpoint is " + weight_format +
                     "; crosspoint does not quantise at load (`crosspoint quantize` writes a quantised checkpoint)");
}

int serve(const ServeOptions& o) {
  Stopwatch startup;
  if (Status s = check_vllm_serve_flags(o.vllm); !s.is_ok()) return report_error("serve", s);
  for (const auto& [flag, value] : o.vllm.given_without_effect)
    log_info("{}{}: vLLM's flag, without effect in crosspoint serve", flag, value.empty() ? "" : " " + value);
  if (o.threads > 0) set_global_num_threads(o.threads);
  std::string why_device;
  auto device = analysis::resolve_device(o.device, &why_device);
  if (!device.is_ok()) return report_error("serve", device.status());
  log_info("device: {} ({})", device.value(), why_device);
  auto dir = resolve_model_dir(o.model);
  if (!dir.is_ok()) return report_error("serve", dir.status());
  auto generation_defaults = load_generation_defaults(o.generation_config, dir.value(), o.override_generation_config);
  if (!generation_defaults.is_ok()) return report_error("serve", generation_defaults.status());
  if (generation_defaults.value().empty())
    log_info(
        "sampling defaults: vLLM's neutral ones (--generation-config {}{})", o.generation_config,
        generation_defaults.value().source.empty() ? "" : "; " + generation_defaults.value().source + " sets none");
  else
    log_info(
        "sampling defaults of requests that leave them unset: {} (from {}; --generation-config vllm for "
        "the neutral ones)",
        generation_defaults.value().describe(), generation_defaults.value().source);
  Stopwatch load_timer;
  ModelLoadOptions load_options;
  load_options.linear_formats = quantized_linear_weight_formats();  // W8A8-FP8 and W4A16 checkpoints too
  auto activation_dtype = cpu_activation_dtype_for(o.dtype, device.value());
  if (!activation_dtype.is_ok()) return report_error("serve", activation_dtype.status());
  load_options.activation_dtype = activation_dtype.value();
  if (load_options.activation_dtype != ActivationDtype::kFloat32)
    log_info("--dtype {}: activations rounded to {} at the places the GPU model stores them", o.dtype,
             activation_dtype_name(load_options.activation_dtype));
  auto model = Model::load(dir.value(), load_options);
  if (!model.is_ok()) return report_error("serve", model.status());
  const double load_s = load_timer.elapsed_seconds();
  const std::string tokenizer_dir = o.vllm.tokenizer.empty() ? dir.value() : o.vllm.tokenizer;
  auto tokenizer = Tokenizer::from_model_dir(tokenizer_dir);
  if (!tokenizer.is_ok()) return report_error("serve", tokenizer.status());
  const Model& m = *model.value();
  if (Status s = check_quantization_flag(o.vllm.quantization, m.weight_format_name()); !s.is_ok())
    return report_error("serve", s);
  log_info("model {} ({}): weights {:.3f} GiB, loaded in {:.2f} s", dir.value(), m.weight_format_name(),
           m.weight_bytes_total() / kGiB, load_s);
  // vLLM serves a bf16 checkpoint in bf16 by default; say how this server serves it.
  const bool gpu_bf16 = device.value() == "cuda" && gpu_serves_bf16(o.dtype, o.kv_cache_dtype, m);
  if (m.config().torch_dtype == "bfloat16" && o.dtype == "auto") {
    if (device.value() == "cuda" && !gpu_bf16)
      log_warning(
          "the checkpoint's torch_dtype is bfloat16, but its {} linears{} take fp16 activations on the GPU: "
          "activations run in fp16, whose range ends at 65504 where bf16's reaches 3.4e38",
          m.weight_format_name(), o.kv_cache_dtype == "auto" ? "" : " or the fp8 KV cache");
    else if (device.value() == "cpu")
      log_info(
          "the checkpoint's torch_dtype is bfloat16: activations in f32 on the CPU (--dtype bfloat16 rounds them "
          "to bf16 where a GPU would store them)");
  }

  const int64_t max_model_len = o.max_model_len > 0 ? o.max_model_len : m.config().max_position_embeddings;
  if (max_model_len <= 1 || max_model_len > (1 << 30)) {
    return report_error(
        "serve", invalid_argument("--max-model-len must be between 2 and 2^30, got " + std::to_string(max_model_len)));
  }
  if (const int64_t window = m.config().sliding_window; window > 0) {
    if (max_model_len > window)
      return report_error("serve", invalid_argument("--max-model-len " + std::to_string(max_model_len) +
                                                    " exceeds the model's sliding_window " + std::to_string(window) +
                                                    ": sliding-window attention is not implemented, so sequences "
                                                    "are served up to the window, where it equals full attention"));
    log_info("model: sliding_window {}: sequences are served up to {} positions", window, window);
  }
  if (o.max_connections < 1 || o.header_timeout_s <= 0 || o.body_timeout_s <= 0 || o.idle_timeout_s <= 0 ||
      o.max_body_bytes < 1 || o.max_header_bytes < 256 || o.shutdown_timeout_s < 0) {
    return report_error("serve", invalid_argument("--max-connections must be >= 1, the timeouts positive "
                                                  "(--shutdown-timeout >= 0), --max-body-bytes >= 1 and "
                                                  "--max-header-bytes >= 256"));
  }
  if (o.max_waiting < 0 || o.mean_tokens_per_request <= 0) {
    return report_error("serve", invalid_argument("--max-waiting must be >= 0 and --mean-tokens-per-request positive"));
  }
  DeviceRunnerOptions runner_options;
  runner_options.device = device.value();
  runner_options.max_num_seqs = o.max_num_seqs;
  runner_options.max_num_batched_tokens = o.max_num_batched_tokens;
  runner_options.max_model_len = max_model_len;
  runner_options.block_size = o.block_size;
  runner_options.kv_cache_memory = o.kv_cache_memory;
  runner_options.kv_cache_dtype = o.kv_cache_dtype;
  runner_options.gpu_memory_utilization = o.gpu_memory_utilization;
  runner_options.memory_budget = o.memory_budget;
  runner_options.num_kv_blocks = o.num_kv_blocks;
  // On by default where a cached prefix gives the bits a recomputation would: on the CPU, and
  // on the GPU in --deterministic mode (chunk-invariant kernels). The GPU's default kernels
  // compute a prompt's tail differently from the whole prompt, so there the same request sent
  // twice would no longer give the same bits: off unless asked for.
  const bool caching_default = device.value() == "cpu" || o.deterministic;
  const bool prefix_caching = o.enable_prefix_caching || (caching_default && !o.disable_prefix_caching);
  runner_options.enable_prefix_caching = prefix_caching;
  runner_options.enforce_eager = o.enforce_eager;
  runner_options.sample_on_host = o.sample_on_host;
  runner_options.deterministic = o.deterministic;
  runner_options.tensor_parallel_size = o.vllm.tensor_parallel_size;
  runner_options.gpu_bf16 = gpu_bf16;
  if (gpu_bf16)
    log_info("--dtype {}: activations, weights, KV cache and logits in bf16 on the GPU (fp32 residual stream)",
             o.dtype == "auto" ? "auto (the checkpoint's torch_dtype, bfloat16)" : o.dtype);
  auto device_runner = make_device_runner(runner_options, m);
  if (!device_runner.is_ok()) return report_error("serve", device_runner.status());
  const int32_t num_blocks = device_runner->num_blocks;
  const int64_t kv_tokens = static_cast<int64_t>(num_blocks) * o.block_size;
  log_info("prefix caching: {}",
           prefix_caching ? "on (whole blocks of identical prompt prefixes are reused; --no-enable-prefix-caching "
                            "turns it off)"
           : o.disable_prefix_caching
               ? "off (--no-enable-prefix-caching)"
               : "off: on the GPU without --deterministic a cached prefix is not bit-identical to recomputing it, "
                 "so the same request would not always give the same bits (--enable-prefix-caching turns it on)");
  log_info("Maximum concurrency for {} tokens per request (worst case: every request at max-model-len): {:.2f}x",
           max_model_len, static_cast<double>(kv_tokens) / max_model_len);
  log_info(
      "Workload-based capacity at {:.0f} tokens per request (--mean-tokens-per-request; ShareGPT mean 438): "
      "~{:.0f} concurrent requests (blocks are allocated as tokens arrive, not max-model-len up front)",
      o.mean_tokens_per_request, static_cast<double>(kv_tokens) / o.mean_tokens_per_request);

  EngineConfig engine_config = engine_config_for(runner_options, num_blocks, tokenizer.value()->eos_token_ids(), m);
  engine_config.max_waiting = o.max_waiting;
  Engine engine(engine_config, std::move(device_runner->runner));

  ServerConfig server_config;
  server_config.host = o.host;
  server_config.port = o.port;
  server_config.served_model_name = o.served_model_name.empty() ? o.model : o.served_model_name;
  server_config.model_root = dir.value();
  server_config.api_key = o.api_key;
  server_config.max_connections = o.max_connections;
  server_config.header_timeout_s = o.header_timeout_s;
  server_config.body_timeout_s = o.body_timeout_s;
  server_config.idle_timeout_s = o.idle_timeout_s;
  server_config.max_body_bytes = static_cast<size_t>(o.max_body_bytes);
  server_config.max_header_bytes = static_cast<size_t>(o.max_header_bytes);
  server_config.shutdown_timeout_s = o.shutdown_timeout_s;
  server_config.generation_defaults = generation_defaults.value();
  server_config.seed = o.vllm.seed;
  ensure_descriptors(o.max_connections);
  ChatTemplate chat_template;
  if (!o.chat_template.empty()) {
    auto given = chat_template_from_spec(o.chat_template, tokenizer_dir);
    if (!given.is_ok()) return report_error("serve", given.status());
    chat_template = std::move(given.value());
  } else {
    chat_template = chat_template_for_model_dir(tokenizer_dir);
  }
  if (!chat_template.error.empty())
    log_warning("chat template: {}; chat requests will be refused (completions work)", chat_template.error);
  else
    log_info("chat template: {}", !o.chat_template.empty() ? chat_template.origin
                                  : chat_template.jinja    ? "the model's own (" + chat_template.origin + ")"
                                                           : std::string("none in the model, ChatML"));
  OpenAiServer server(server_config, engine, *tokenizer.value(), std::move(chat_template));
  if (Status s = server.bind(); !s.is_ok()) return report_error("serve", s);
  log_info(
      "engine: device {}, max-num-seqs {}, max-num-batched-tokens {}, max-model-len {}, max-waiting {}, {} threads",
      device.value(), o.max_num_seqs, o.max_num_batched_tokens, max_model_len, o.max_waiting,
      global_thread_pool().num_threads());
  log_info(
      "http: max-connections {}, header-timeout {:g} s, body-timeout {:g} s, idle-timeout {:g} s, max-body-bytes {}, "
      "shutdown-timeout {:g} s, API key {}",
      o.max_connections, o.header_timeout_s, o.body_timeout_s, o.idle_timeout_s, o.max_body_bytes, o.shutdown_timeout_s,
      o.api_key.empty() ? "off (every route is open)" : "required on every route but /health");
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
  app.add_option("--generation-config", o.generation_config,
                 "sampling defaults for requests that leave them unset, as vLLM: 'auto' (the model's "
                 "generation_config.json: temperature, top_k, top_p, min_p, repetition_penalty, max_new_tokens), "
                 "'vllm' (the neutral ones), or a directory holding a generation_config.json");
  app.add_option("--chat-template", o.chat_template,
                 "the chat template instead of the model's, as vLLM: a Jinja file, or the template itself in "
                 "one line (when no such file opens)");
  app.add_option("--override-generation-config", o.override_generation_config,
                 "a JSON object of those keys applied over --generation-config, e.g. '{\"temperature\": 0.5}'");
  app.add_option("--max-model-len", o.max_model_len, "prompt + output tokens per request (default: the model's)");
  app.add_option("--api-key", o.api_key, "require 'Authorization: Bearer KEY' on every route but /health");
  app.add_option("--max-connections", o.max_connections,
                 "open connections served; beyond them a connection may only ask for /health, others get 503")
      ->capture_default_str();
  app.add_option("--header-timeout", o.header_timeout_s, "seconds a request head may take to arrive (then 408)")
      ->capture_default_str();
  app.add_option("--body-timeout", o.body_timeout_s, "seconds a request body may take to arrive (then 408)")
      ->capture_default_str();
  app.add_option("--idle-timeout", o.idle_timeout_s,
                 "seconds a connection with no request in progress stays open (keep-alive, or nothing sent yet)")
      ->capture_default_str();
  app.add_option("--max-body-bytes", o.max_body_bytes, "largest request body (413 before it is read)")
      ->capture_default_str();
  app.add_option("--max-header-bytes", o.max_header_bytes, "largest request head: request line and headers (431)")
      ->capture_default_str();
  app.add_option("--shutdown-timeout", o.shutdown_timeout_s,
                 "on SIGTERM/SIGINT, seconds requests in flight may take to finish before they end with a 503 error "
                 "(0 = end them at once)")
      ->capture_default_str();
  app.add_option("--max-num-seqs", o.max_num_seqs, "sequences per engine step");
  app.add_option("--max-num-batched-tokens", o.max_num_batched_tokens,
                 "tokens per engine step (prefill chunks + decodes)");
  app.add_option("--kv-cache-memory", o.kv_cache_memory, "cpu: memory for the paged KV cache (e.g. 1GiB, 512MiB)");
  app.add_option("--kv-cache-dtype", o.kv_cache_dtype, kKvCacheDtypeHelp)->capture_default_str();
  app.add_option("--dtype", o.dtype, kDtypeHelp)->capture_default_str();
  app.add_option("--device", o.device, "auto (cuda when a GPU is visible, else cpu), cpu or cuda")
      ->capture_default_str();
  app.add_option("--gpu-memory-utilization", o.gpu_memory_utilization,
                 "cuda: fraction of the GPU's total memory for weights, activations and the KV cache")
      ->check(CLI::Range(0.01, 1.0));
  app.add_option("--num-gpu-blocks-override", o.num_kv_blocks,
                 "exactly this many KV blocks of --block-size tokens, on either device, instead of what the memory "
                 "options leave (vLLM's name; tests and soaks that must exhaust the cache)")
      ->check(CLI::Range(1, 1 << 30));
  app.add_option("--memory-budget", o.memory_budget,
                 "bytes this server may hold for weights, activations and the KV cache (e.g. 24GB: a smaller GPU's "
                 "capacity on a larger one); replaces --gpu-memory-utilization and --kv-cache-memory")
      ->excludes("--kv-cache-memory");
  auto* enable_caching =
      app.add_flag("--enable-prefix-caching", o.enable_prefix_caching,
                   "reuse the KV blocks of earlier requests' identical prompt prefixes (whole blocks) instead of "
                   "recomputing them. Default: on with --device cpu and with --deterministic (outputs stay "
                   "bit-identical); off on the GPU's default kernels, where it would change a repeated request's bits");
  app.add_flag("--no-enable-prefix-caching", o.disable_prefix_caching, "never reuse cached prompt blocks")
      ->excludes(enable_caching);
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
  add_vllm_serve_flags(app, o.vllm);
  std::string config_path;  // read before parsing (expand_vllm_config_file); here for --help
  app.add_option("--config", config_path,
                 "YAML file of flags, vLLM's format (`max-num-seqs: 64`, `enforce-eager: true`); the command line "
                 "wins over it");
  Result<ExpandedConfig> config = expand_vllm_config_file(expand_vllm_short_flags(argc, argv));
  if (!config.is_ok()) return report_error("serve", config.status());
  if (!config->path.empty()) {
    for (const std::string& flag : config->from_file) {
      if (app.get_option_no_throw(flag) == nullptr) {
        std::fprintf(stderr, "crosspoint serve: --config %s: %s is not a flag of crosspoint serve (see --help)\n",
                     config->path.c_str(), flag.substr(2).c_str());
        return 2;
      }
    }
    std::fprintf(stderr, "crosspoint serve: %zu flag(s) from %s\n", config->from_file.size(), config->path.c_str());
  }
  std::vector<std::string> args = config->args;
  std::vector<char*> arg_pointers;
  for (std::string& a : args) arg_pointers.push_back(a.data());
  if (int code = parse_or_exit_code(app, static_cast<int>(arg_pointers.size()), arg_pointers.data()); code >= 0)
    return code;
  if (!o.vllm.positional_model.empty()) {
    // The positional MODEL wins over a config file's `model:`, as in vLLM.
    if (app.count("--model") > 0 && o.model != o.vllm.positional_model && config->from_file.count("--model") == 0) {
      std::fprintf(stderr, "crosspoint serve: the model is given twice: %s and --model %s\n",
                   o.vllm.positional_model.c_str(), o.model.c_str());
      return 2;
    }
    o.model = o.vllm.positional_model;
  }
  return serve(o);
}

}  // namespace crosspoint::cli
