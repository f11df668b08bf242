// The real OpenAI server, engine and scheduler in front of a toy model (tests/engine/
// toy_model.h's logits, K/V kept in its own paged token store), with a real tokenizer. It
// lets the Python `openai` SDK tests exercise the HTTP layer fast and without model
// weights; the same tests also run against `crosspoint serve` with the default model.
//
//   serving_toy_server --tokenizer tokenizer.json|model.gguf [--port 0] [--kv-blocks N]
//       [--block-size N] [--max-num-seqs N] [--max-num-batched-tokens N] [--max-model-len N]
//       [--max-waiting N] [--api-key K] [--step-delay-ms N] [--model-root DIR]
//       [--max-connections N] [--header-timeout S] [--body-timeout S] [--idle-timeout S]
//       [--max-body-bytes N] [--shutdown-timeout S]
// Prints "port <n>" on stdout once listening.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <thread>

#include "common/log.h"
#include "engine/toy_model.h"
#include "formats/gguf.h"
#include "runner/request_sampler.h"
#include "runner/token_logprobs.h"
#include "server/openai_server.h"

namespace crosspoint {
namespace {

// A Runner with the toy model's logits and a paged token store of its own.
class ToyPagedRunner : public Runner {
 public:
  ToyPagedRunner(int32_t num_blocks, int32_t block_size, int step_delay_ms)
      : block_size_(block_size),
        store_(static_cast<size_t>(num_blocks) * block_size, -1),
        step_delay_ms_(step_delay_ms) {}

  Result<StepOutput> execute(const BatchPlan& plan) override {
    if (step_delay_ms_ > 0) std::this_thread::sleep_for(std::chrono::milliseconds(step_delay_ms_));
    StepOutput out;
    out.sampled_token_ids.assign(plan.seqs.size(), -1);
    std::vector<float> logits(testing::kToyVocabSize);
    for (size_t i = 0; i < plan.seqs.size(); ++i) {
      const ScheduledSequence& s = plan.seqs[i];
      for (int32_t t = 0; t < s.num_new_tokens(); ++t) slot(s, s.num_computed_tokens + t) = s.token_ids[t];
      // Prompt logprobs: the logits after each of the first prompt_logprob_targets.size() new tokens.
      for (size_t t = 0; t < s.prompt_logprob_targets.size(); ++t) {
        std::vector<int32_t> context(s.num_computed_tokens + t + 1);
        for (size_t pos = 0; pos < context.size(); ++pos) context[pos] = slot(s, static_cast<int32_t>(pos));
        testing::toy_reference_logits(context, logits.data());
        // Prompt ids come from the real tokenizer and may lie past the toy's vocabulary: those
        // have a logit of -inf (the toy never produces them).
        const int32_t target = s.prompt_logprob_targets[t];
        std::vector<float> row(logits);
        if (target >= static_cast<int32_t>(row.size())) row.resize(target + 1, -std::numeric_limits<float>::infinity());
        out.prompt_logprobs.resize(plan.seqs.size());
        out.prompt_logprobs[i].push_back(compute_token_logprobs(row, target, s.sampling().num_prompt_logprobs));
      }
      if (!s.sample) continue;
      std::vector<int32_t> context(s.context_len());
      for (int32_t pos = 0; pos < s.context_len(); ++pos) context[pos] = slot(s, pos);
      testing::toy_reference_logits(context, logits.data());
      out.sampled_token_ids[i] = sample_scheduled_token(logits.data(), testing::kToyVocabSize, s);
      if (s.sampling().wants_logprobs()) {
        out.logprobs.resize(plan.seqs.size());
        out.logprobs[i] = compute_token_logprobs(logits, out.sampled_token_ids[i], s.sampling().num_logprobs);
      }
    }
    return out;
  }

 private:
  int32_t& slot(const ScheduledSequence& s, int32_t pos) {
    return store_[static_cast<size_t>(s.block_table[pos / block_size_]) * block_size_ + pos % block_size_];
  }
  int32_t block_size_;
  std::vector<int32_t> store_;  // [num_blocks * block_size] token id in each KV slot
  int step_delay_ms_;
};

int run(int argc, char** argv) {
  std::string tokenizer_path, api_key, model_root = "toy";
  int port = 0, step_delay_ms = 0;
  ServerConfig server_config;
  EngineConfig config;
  config.scheduler.num_blocks = 512;
  config.scheduler.block_size = 16;
  config.scheduler.max_num_seqs = 64;
  config.scheduler.max_num_batched_tokens = 512;
  config.scheduler.max_model_len = 512;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string key = argv[i];
    const std::string value = argv[i + 1];
    if (key == "--tokenizer") tokenizer_path = value;
    else if (key == "--port") port = std::stoi(value);
    else if (key == "--kv-blocks") config.scheduler.num_blocks = std::stoi(value);
    else if (key == "--block-size") config.scheduler.block_size = std::stoi(value);
    else if (key == "--max-num-seqs") config.scheduler.max_num_seqs = std::stoi(value);
    else if (key == "--max-num-batched-tokens") config.scheduler.max_num_batched_tokens = std::stoi(value);
    else if (key == "--max-model-len") config.scheduler.max_model_len = std::stoi(value);
    else if (key == "--max-waiting") config.max_waiting = std::stoi(value);
    else if (key == "--api-key") api_key = value;
    else if (key == "--step-delay-ms") step_delay_ms = std::stoi(value);
    else if (key == "--model-root") model_root = value;
    else if (key == "--max-connections") server_config.max_connections = std::stoi(value);
    else if (key == "--header-timeout") server_config.header_timeout_s = std::stod(value);
    else if (key == "--body-timeout") server_config.body_timeout_s = std::stod(value);
    else if (key == "--idle-timeout") server_config.idle_timeout_s = std::stod(value);
    else if (key == "--max-body-bytes") server_config.max_body_bytes = std::stoull(value);
    else if (key == "--shutdown-timeout") server_config.shutdown_timeout_s = std::stod(value);
    else {
      std::fprintf(stderr, "serving_toy_server: unknown option %s\n", key.c_str());
      return 2;
    }
  }
  std::unique_ptr<Tokenizer> tokenizer;
  if (tokenizer_path.size() > 5 && tokenizer_path.substr(tokenizer_path.size() - 5) == ".gguf") {
    auto gguf = GgufFile::open(tokenizer_path);
    if (!gguf.is_ok()) return std::fprintf(stderr, "%s\n", gguf.status().to_string().c_str()), 1;
    auto t = Tokenizer::from_gguf(gguf.value());
    if (!t.is_ok()) return std::fprintf(stderr, "%s\n", t.status().to_string().c_str()), 1;
    tokenizer = std::move(t).value();
  } else {
    auto t = Tokenizer::from_tokenizer_json(tokenizer_path);
    if (!t.is_ok()) return std::fprintf(stderr, "%s\n", t.status().to_string().c_str()), 1;
    tokenizer = std::move(t).value();
  }
  config.eos_token_ids = tokenizer->eos_token_ids();
  Engine engine(config, std::make_unique<ToyPagedRunner>(config.scheduler.num_blocks, config.scheduler.block_size,
                                                         step_delay_ms));
  server_config.port = port;
  server_config.served_model_name = "toy";
  server_config.model_root = model_root;
  server_config.api_key = api_key;
  // ChatML with a default system prompt, as a Jinja template like a model's own.
  auto chat_template = chat_template_from_source(
      "{% if messages[0]['role'] != 'system' %}{{ '<|im_start|>system\nYou are a toy.<|im_end|>\n' }}{% endif %}"
      "{% for m in messages %}{{ '<|im_start|>' + m['role'] + '\n' + m['content'] + '<|im_end|>\n' }}{% endfor %}"
      "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}");
  if (!chat_template.is_ok()) return std::fprintf(stderr, "%s\n", chat_template.status().to_string().c_str()), 1;
  OpenAiServer server(server_config, engine, *tokenizer, std::move(chat_template.value()));
  if (Status s = server.bind(); !s.is_ok()) return std::fprintf(stderr, "%s\n", s.to_string().c_str()), 1;
  std::printf("port %d\n", server.port());
  std::fflush(stdout);
  if (Status s = server.run(); !s.is_ok()) return std::fprintf(stderr, "%s\n", s.to_string().c_str()), 1;
  return 0;
}

}  // namespace
}  // namespace crosspoint

int main(int argc, char** argv) { return crosspoint::run(argc, argv); }
