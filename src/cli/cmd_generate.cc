// crosspoint generate: one prompt as one request through the engine that `serve` runs (same
// runner, scheduler and sampler), streamed to stdout as it is produced.
//   crosspoint generate --model DIR|default --prompt TEXT [--chat] [--system S]
//       [--max-tokens N] [--temperature T] [--top-p P] [--top-k K] [--seed S]
//       [--threads N] [--stats] [--ids] [--device auto|cpu|cuda] [--deterministic]
// Temperature 0 is greedy. Generation stops at an eos token or after max-tokens.
#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "analysis/gpu_ceilings.h"
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "cli/device_runner.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/paths.h"
#include "common/thread_pool.h"
#include "engine/engine.h"
#include "kernels/sampling.h"
#include "model/model.h"
#include "quant/gptq_linear_weight.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace crosspoint::cli {
namespace {

struct GenerateOptions {
  std::string model = "default";
  std::string prompt;
  bool chat = false;
  std::string system;
  int32_t max_tokens = 128;
  float temperature = 0.0f;
  float top_p = 1.0f;
  int32_t top_k = 0;
  uint64_t seed = 0;
  int threads = 0;
  bool stats = false;
  bool print_ids = false;
  std::string device = "auto";  // auto (cuda when a GPU is visible) | cpu | cuda
  std::string kv_cache_dtype = "auto";
  bool deterministic = false;  // cuda: the batch-invariant kernels of serve --deterministic
};

struct GenerateStats {
  double load_s = 0, prefill_s = 0, decode_s = 0;
  int64_t num_prompt_tokens = 0, num_generated = 0;
};

Result<std::vector<int32_t>> encode_prompt(const GenerateOptions& o, const std::string& dir,
                                           const Tokenizer& tokenizer) {
  if (!o.chat) return tokenizer.encode(o.prompt);
  std::vector<ChatMessage> messages;
  if (!o.system.empty()) messages.push_back({"system", o.system});
  messages.push_back({"user", o.prompt});
  return encode_chat(tokenizer, chat_template_for_model_dir(dir), messages);
}

Status generate(const GenerateOptions& o, GenerateStats& stats) {
  CROSSPOINT_RETURN_IF_ERROR(validate_sampling_params({o.temperature, o.top_k, o.top_p}));
  if (o.max_tokens < 0) return invalid_argument("--max-tokens must be >= 0");
  if (o.threads > 0) set_global_num_threads(o.threads);
  // Checked before the model is read, so a device that cannot be used is the one error.
  std::string why_device;
  CROSSPOINT_ASSIGN_OR_RETURN(const std::string device, analysis::resolve_device(o.device, &why_device));
  log_info("device: {} ({})", device, why_device);
  const Stopwatch load_clock;
  CROSSPOINT_ASSIGN_OR_RETURN(std::string dir, resolve_model_dir(o.model));
  CROSSPOINT_ASSIGN_OR_RETURN(auto tokenizer, Tokenizer::from_model_dir(dir));
  ModelLoadOptions load_options;
  load_options.linear_formats = quantized_linear_weight_formats();  // W8A8-FP8 and W4A16 checkpoints too
  CROSSPOINT_ASSIGN_OR_RETURN(auto model, Model::load(dir, load_options));
  global_thread_pool();  // start the workers before timing anything else
  stats.load_s = load_clock.elapsed_seconds();

  CROSSPOINT_ASSIGN_OR_RETURN(std::vector<int32_t> prompt, encode_prompt(o, dir, *tokenizer));
  if (prompt.empty()) return invalid_argument("--prompt: the prompt encodes to no tokens");
  const int64_t max_context = model->config().max_position_embeddings;
  if (max_context > 0 && static_cast<int64_t>(prompt.size()) + o.max_tokens > max_context)
    return invalid_argument("prompt (" + std::to_string(prompt.size()) + " tokens) plus --max-tokens " +
                            std::to_string(o.max_tokens) + " exceeds the model's max_position_embeddings " +
                            std::to_string(max_context));
  stats.num_prompt_tokens = static_cast<int64_t>(prompt.size());

  // One sequence of the whole prompt plus its output: a cache of exactly that, the prompt in
  // one step.
  DeviceRunnerOptions runner_options;
  runner_options.device = device;
  runner_options.max_num_seqs = 1;
  runner_options.max_num_batched_tokens = static_cast<int32_t>(prompt.size());
  runner_options.max_model_len = static_cast<int64_t>(prompt.size()) + std::max(o.max_tokens, 1);
  runner_options.num_kv_blocks =
      static_cast<int32_t>((runner_options.max_model_len + runner_options.block_size - 1) / runner_options.block_size);
  runner_options.enforce_eager = true;  // one sequence: no graphs to capture for it
  runner_options.deterministic = o.deterministic;
  runner_options.kv_cache_dtype = o.kv_cache_dtype;
  const Stopwatch upload_clock;
  CROSSPOINT_ASSIGN_OR_RETURN(DeviceRunner runner, make_device_runner(runner_options, *model));
  stats.load_s += upload_clock.elapsed_seconds();
  Engine engine(engine_config_for(runner_options, runner.num_blocks, tokenizer->eos_token_ids(), *model),
                std::move(runner.runner));

  EngineRequest request;
  request.prompt_token_ids = prompt;
  request.max_tokens = o.max_tokens;
  request.sampling.temperature = o.temperature;
  request.sampling.top_p = o.top_p;
  request.sampling.top_k = o.top_k;
  request.sampling.seed = o.seed;
  IncrementalDecoder decoder(*tokenizer, /*skip_special=*/true);
  std::vector<int32_t> generated;
  std::mutex mutex;
  std::condition_variable done;
  bool finished = false;
  FinishReason reason = FinishReason::kNone;
  double first_token_s = 0, last_token_s = 0;
  const Stopwatch clock;
  // The sink runs on the engine thread: it prints each token's text as it comes.
  auto sink = [&](const RequestOutput& out) {
    std::lock_guard<std::mutex> lock(mutex);
    for (int32_t token : out.new_token_ids) {
      last_token_s = clock.elapsed_seconds();
      if (generated.empty()) first_token_s = last_token_s;
      generated.push_back(token);
      const bool eos = out.finished && out.finish_reason == FinishReason::kStop;  // the EOS itself is not text
      if (eos) continue;
      const std::string text = decoder.push(token);
      std::fwrite(text.data(), 1, text.size(), stdout);
      std::fflush(stdout);
    }
    if (out.finished) {
      finished = true;
      reason = out.finish_reason;
      done.notify_all();
    }
  };
  if (o.max_tokens > 0) {
    CROSSPOINT_ASSIGN_OR_RETURN(const int64_t id, engine.submit(request, sink));
    (void)id;
    engine.start();
    std::unique_lock<std::mutex> lock(mutex);
    done.wait(lock, [&] { return finished; });
  }
  engine.stop();
  if (reason == FinishReason::kError) return internal_error("the engine failed the request (see the log above)");
  const std::string rest = decoder.flush();
  std::fwrite(rest.data(), 1, rest.size(), stdout);
  std::fputc('\n', stdout);
  stats.prefill_s = first_token_s;
  stats.decode_s = last_token_s - first_token_s;
  stats.num_generated = static_cast<int64_t>(generated.size());
  if (o.print_ids) {
    std::string ids = "[";
    for (size_t i = 0; i < generated.size(); ++i) ids += (i ? ", " : "") + std::to_string(generated[i]);
    std::printf("%s]\n", ids.c_str());
  }
  if (o.stats) {
    // Decode steps = generated - 1 (the first token comes from the prefill's logits).
    const double decode_steps = std::max<int64_t>(1, stats.num_generated - 1);
    std::fprintf(stderr,
                 "[stats] model %s (%s weights, %.3f GiB, %.1f MB read per token), threads %d\n"
                 "[stats] load %.3f s | prefill %lld tokens in %.3f s = %.1f tok/s | decode %lld tokens in %.3f s = "
                 "%.1f tok/s\n",
                 dir.c_str(), model->weight_format_name().c_str(), model->weight_bytes_total() / double(1 << 30),
                 model->weight_bytes_per_token() / 1e6, global_thread_pool().num_threads(), stats.load_s,
                 static_cast<long long>(stats.num_prompt_tokens), stats.prefill_s,
                 stats.num_prompt_tokens / stats.prefill_s, static_cast<long long>(stats.num_generated - 1),
                 stats.decode_s, stats.num_generated > 1 ? decode_steps / stats.decode_s : 0.0);
  }
  return Status::ok();
}

}  // namespace

int run_generate(int argc, char** argv) {
  CLI::App app{"Generate a continuation of a prompt on the CPU or GPU, streamed as it is produced"};
  GenerateOptions o;
  app.add_option("--model", o.model, "model directory, or 'default' (SmolLM2-135M-Instruct)");
  app.add_option("--prompt", o.prompt, "prompt text")->required();
  app.add_flag("--chat", o.chat, "wrap the prompt in the model's ChatML chat template");
  app.add_option("--system", o.system, "system message for --chat (default: the model's own)");
  app.add_option("--max-tokens", o.max_tokens, "tokens to generate at most")->check(CLI::NonNegativeNumber);
  app.add_option("--temperature", o.temperature, "0 = greedy");
  app.add_option("--top-p", o.top_p, "nucleus sampling mass in (0, 1]");
  app.add_option("--top-k", o.top_k, "keep the k most likely tokens (0 = off)");
  app.add_option("--seed", o.seed, "random seed for sampling (the tokens a server request with this seed gets)");
  app.add_option("--threads", o.threads, "CPU threads (default: CROSSPOINT_NUM_THREADS or all cores)");
  app.add_flag("--stats", o.stats, "print load time, prefill and decode tok/s, weight size to stderr");
  app.add_option("--kv-cache-dtype", o.kv_cache_dtype, kKvCacheDtypeHelp)->capture_default_str();
  app.add_option("--device", o.device, "auto (cuda when a GPU is visible, else cpu), cpu or cuda")
      ->capture_default_str();
  app.add_flag("--deterministic", o.deterministic,
               "cuda: the batch-invariant kernels of serve --deterministic (the CPU's kernels always are)");
  app.add_flag("--ids", o.print_ids, "print the generated token ids as a JSON array on a last line");
  if (const int code = parse_or_exit_code(app, argc, argv); code >= 0) return code;
  GenerateStats stats;
  const Status status = generate(o, stats);
  if (!status.is_ok()) return report_error("generate", status);
  return 0;
}

}  // namespace crosspoint::cli
