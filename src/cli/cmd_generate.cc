// crosspoint generate: one prompt, one sequence, streamed to stdout as it is produced.
//   crosspoint generate --model DIR|default --prompt TEXT [--chat] [--system S]
//       [--max-tokens N] [--temperature T] [--top-p P] [--top-k K] [--seed S]
//       [--threads N] [--stats] [--ids] [--device auto|cpu|cuda]
// Temperature 0 is greedy. Generation stops at an eos token or after max-tokens.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "analysis/gpu_ceilings.h"
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/paths.h"
#include "common/thread_pool.h"
#include "kernels/sampling.h"
#include "model/model.h"
#include "quant/gptq_linear_weight.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"
#ifdef CROSSPOINT_HAVE_CUDA
#include "model/cuda/cuda_model.h"
#endif

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
  bool deterministic = false;   // cuda: the batch-invariant kernels of serve --deterministic
};

struct GenerateStats {
  double load_s = 0, prefill_s = 0, decode_s = 0;
  int64_t num_prompt_tokens = 0, num_generated = 0;
};

// Runs prompt then decode steps in one sequence whose blocks are 0, 1, 2, ... of the cache.
class SingleSequence {
 public:
  SingleSequence(const Model& model, int32_t max_tokens_total, int32_t block_size = 16)
      : model_(model), block_size_(block_size), max_blocks_((max_tokens_total + block_size - 1) / block_size),
        cache_(model.kv_cache_shape(max_blocks_, block_size)), logits_(model.vocab_size()) {
    for (int32_t b = 0; b < max_blocks_; ++b) block_table_.push_back(b);
  }

#ifdef CROSSPOINT_HAVE_CUDA
  // Runs the steps on the GPU instead: a CudaModel sized for this one sequence.
  Status use_cuda(int32_t max_step_tokens, bool batch_invariant) {
    cuda::CudaModelOptions options;
    options.batch_invariant = batch_invariant;
    options.max_num_tokens = std::max(1, max_step_tokens);
    options.max_num_seqs = 1;
    options.max_num_logits = 1;
    options.max_model_len = max_blocks_ * block_size_;
    options.block_size = block_size_;
    options.num_kv_blocks = max_blocks_;
    CROSSPOINT_ASSIGN_OR_RETURN(cuda_model_, cuda::CudaModel::create(model_, options));
    return Status::ok();
  }
#endif

  // Appends tokens to the sequence and returns the logits after the last one.
  Result<const float*> step(const std::vector<int32_t>& tokens) {
    std::vector<int32_t> positions;
    for (size_t i = 0; i < tokens.size(); ++i) positions.push_back(context_ + static_cast<int32_t>(i));
    context_ += static_cast<int32_t>(tokens.size());
    const std::vector<int32_t> starts = {0, static_cast<int32_t>(tokens.size())};
    const std::vector<int32_t> context = {context_};
    const std::vector<int32_t> logits_idx = {static_cast<int32_t>(tokens.size()) - 1};
    ForwardBatch batch;
    batch.token_ids = tokens;
    batch.positions = positions;
    batch.seq_token_start = starts;
    batch.seq_context_len = context;
    batch.block_tables = block_table_;
    batch.max_blocks_per_seq = max_blocks_;
    batch.logits_token_idx = logits_idx;
#ifdef CROSSPOINT_HAVE_CUDA
    if (cuda_model_ != nullptr) {
      CROSSPOINT_RETURN_IF_ERROR(cuda_model_->forward_host(batch, logits_.data()));
      return static_cast<const float*>(logits_.data());
    }
#endif
    CROSSPOINT_RETURN_IF_ERROR(model_.forward(batch, cache_, logits_.data()));
    return static_cast<const float*>(logits_.data());
  }

 private:
  const Model& model_;
  int32_t block_size_, max_blocks_, context_ = 0;
  CpuKvCache cache_;
  std::vector<int32_t> block_table_;
  std::vector<float> logits_;  // [vocab] f32
#ifdef CROSSPOINT_HAVE_CUDA
  std::unique_ptr<cuda::CudaModel> cuda_model_;
#endif
};

Result<std::vector<int32_t>> encode_prompt(const GenerateOptions& o, const std::string& dir, const Tokenizer& tokenizer) {
  if (!o.chat) return tokenizer.encode(o.prompt);
  std::vector<ChatMessage> messages;
  if (!o.system.empty()) messages.push_back({"system", o.system});
  messages.push_back({"user", o.prompt});
  CROSSPOINT_ASSIGN_OR_RETURN(std::string text, apply_chat_template(chat_template_for_model_dir(dir), messages, true));
  return tokenizer.encode(text, /*parse_special=*/true);
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
  std::vector<int32_t> eos = tokenizer->eos_token_ids();
  for (int64_t id : model->config().eos_token_ids) eos.push_back(static_cast<int32_t>(id));

  SingleSequence sequence(*model, static_cast<int32_t>(prompt.size()) + o.max_tokens + 1);
#ifdef CROSSPOINT_HAVE_CUDA
  if (device == "cuda") {
    const Stopwatch upload_clock;
    CROSSPOINT_RETURN_IF_ERROR(sequence.use_cuda(static_cast<int32_t>(prompt.size()), o.deterministic));
    stats.load_s += upload_clock.elapsed_seconds();
  }
#endif
  IncrementalDecoder decoder(*tokenizer, /*skip_special=*/true);
  SamplingRng rng(o.seed);
  const SamplingParams params{o.temperature, o.top_k, o.top_p};
  std::vector<int32_t> generated;

  const Stopwatch prefill_clock;
  CROSSPOINT_ASSIGN_OR_RETURN(const float* logits, sequence.step(prompt));
  stats.prefill_s = prefill_clock.elapsed_seconds();
  const Stopwatch decode_clock;
  for (int32_t i = 0; i < o.max_tokens; ++i) {
    const int32_t next = sample_token(logits, model->vocab_size(), params, rng.next_uniform());
    generated.push_back(next);
    if (std::find(eos.begin(), eos.end(), next) != eos.end()) break;
    const std::string text = decoder.push(next);
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
    if (i + 1 == o.max_tokens) break;
    CROSSPOINT_ASSIGN_OR_RETURN(logits, sequence.step({next}));
  }
  const std::string rest = decoder.flush();
  std::fwrite(rest.data(), 1, rest.size(), stdout);
  std::fputc('\n', stdout);
  stats.decode_s = decode_clock.elapsed_seconds();
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
                 "[stats] load %.3f s | prefill %lld tokens in %.3f s = %.1f tok/s | decode %lld tokens in %.3f s = %.1f tok/s\n",
                 dir.c_str(), model->weight_format_name().c_str(), model->weight_bytes_total() / double(1 << 30),
                 model->weight_bytes_per_token() / 1e6, global_thread_pool().num_threads(), stats.load_s,
                 static_cast<long long>(stats.num_prompt_tokens), stats.prefill_s, stats.num_prompt_tokens / stats.prefill_s,
                 static_cast<long long>(stats.num_generated - 1), stats.decode_s,
                 stats.num_generated > 1 ? decode_steps / stats.decode_s : 0.0);
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
  app.add_option("--seed", o.seed, "random seed for sampling");
  app.add_option("--threads", o.threads, "CPU threads (default: CROSSPOINT_NUM_THREADS or all cores)");
  app.add_flag("--stats", o.stats, "print load time, prefill and decode tok/s, weight size to stderr");
  app.add_option("--device", o.device, "auto (cuda when a GPU is visible, else cpu), cpu or cuda")->capture_default_str();
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
