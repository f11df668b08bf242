#include "cli/vllm_serve_flags.h"

#include <array>

namespace crosspoint {
namespace {

// vllm serve flags that change nothing in crosspoint: weights load from a local directory, logs
// and HTTP are its own, prefill is always chunked. Value-taking, then switches.
constexpr std::array kWithoutEffectOptions = {"--download-dir",
                                              "--load-format",
                                              "--revision",
                                              "--code-revision",
                                              "--tokenizer-revision",
                                              "--tokenizer-mode",
                                              "--uvicorn-log-level",
                                              "--distributed-executor-backend",
                                              "--swap-space",
                                              "--hf-token",
                                              "--allowed-origins",
                                              "--allowed-methods",
                                              "--allowed-headers",
                                              "--root-path",
                                              "--compilation-config",
                                              "--max-parallel-loading-workers",
                                              "--max-seq-len-to-capture",
                                              "--scheduling-policy"};
constexpr std::array kWithoutEffectSwitches = {"--trust-remote-code",          "--disable-log-stats",
                                               "--disable-log-requests",       "--enable-log-requests",
                                               "--disable-uvicorn-access-log", "--disable-frontend-multiprocessing",
                                               "--disable-custom-all-reduce",  "--enable-chunked-prefill",
                                               "--disable-fastapi-docs",       "--enable-prompt-tokens-details"};
// Features crosspoint lacks: refused rather than silently ignored. Value-taking, then switches.
constexpr std::array kUnsupportedOptions = {"--lora-modules",     "--speculative-config", "--ssl-keyfile",
                                            "--ssl-certfile",     "--cpu-offload-gb",     "--tool-call-parser",
                                            "--reasoning-parser", "--kv-transfer-config"};
constexpr std::array kUnsupportedSwitches = {"--enable-lora", "--enable-auto-tool-choice", "--enable-expert-parallel"};

}  // namespace

std::vector<std::string> expand_vllm_short_flags(int argc, char** argv) {
  static const std::map<std::string, std::string> kLong = {
      {"-tp", "--tensor-parallel-size"}, {"-pp", "--pipeline-parallel-size"}, {"-dp", "--data-parallel-size"}};
  std::vector<std::string> out;
  for (int i = 0; i < argc; ++i) {
    std::string arg = argv[i];
    const std::string head = arg.substr(0, arg.find('='));
    if (auto it = kLong.find(head); i > 0 && it != kLong.end()) arg = it->second + arg.substr(head.size());
    out.push_back(std::move(arg));
  }
  return out;
}

void add_vllm_serve_flags(CLI::App& app, VllmServeFlags& flags) {
  app.add_option("model_tag", flags.positional_model, "the model directory, as `vllm serve MODEL` (or --model)");
  app.add_option("--seed", flags.seed,
                 "requests without a seed draw theirs from this one in the order they arrive, so a server restarted "
                 "with the same seed and fed the same requests gives the same outputs (vLLM's --seed)");
  app.add_option("--tokenizer", flags.tokenizer,
                 "a directory with tokenizer.json (and tokenizer_config.json's chat template) to use instead of the "
                 "model's");
  app.add_option("--quantization,-q", flags.quantization,
                 "accepted when it names the checkpoint's own method (fp8, compressed-tensors, gptq, gptq_marlin); "
                 "crosspoint does not quantise at load: `crosspoint quantize` writes the checkpoint");
  app.add_option("--max-logprobs", flags.max_logprobs, "logprobs a request may ask for (crosspoint's limit: 20)");
  app.add_option("--tensor-parallel-size", flags.tensor_parallel_size,
                 "ranks to split the model over (also -tp), each with its share of the weights: on --device cpu "
                 "threads of this process; on --device cuda one GPU a rank (GPUs 0 .. N-1), summing through NCCL");
  app.add_option("--pipeline-parallel-size", flags.pipeline_parallel_size, "1 only: one GPU (also -pp)");
  app.add_option("--data-parallel-size", flags.data_parallel_size, "1 only: one engine (also -dp)");
  auto ignored_group = app.add_option_group("vLLM flags without effect here (accepted, logged)");
  for (const char* name : kWithoutEffectOptions)
    ignored_group->add_option_function<std::string>(
        name, [&flags, name](const std::string& v) { flags.given_without_effect[name] = v; }, "no effect here");
  for (const char* name : kWithoutEffectSwitches)
    ignored_group->add_flag_callback(name, [&flags, name] { flags.given_without_effect[name] = ""; }, "no effect here");
  auto unsupported_group = app.add_option_group("vLLM flags for features crosspoint lacks (refused)");
  for (const char* name : kUnsupportedOptions)
    unsupported_group->add_option_function<std::string>(
        name, [&flags, name](const std::string& v) { flags.given_unsupported[name] = v; }, "refused");
  for (const char* name : kUnsupportedSwitches)
    unsupported_group->add_flag_callback(name, [&flags, name] { flags.given_unsupported[name] = ""; }, "refused");
}

Status check_vllm_serve_flags(const VllmServeFlags& flags) {
  for (const auto& [name, value] : flags.given_unsupported) {
    if (name == "--cpu-offload-gb" && (value == "0" || value == "0.0")) continue;
    return unsupported(name + (value.empty() ? "" : " " + value) +
                       ": crosspoint serve has no such feature (docs/serving.md lists the vLLM flags it takes)");
  }
  if (flags.tensor_parallel_size < 1)
    return invalid_argument("--tensor-parallel-size " + std::to_string(flags.tensor_parallel_size) +
                            ": must be at least 1");
  for (const auto& [name, size] :
       {std::pair<const char*, int>{"--pipeline-parallel-size", flags.pipeline_parallel_size},
        {"--data-parallel-size", flags.data_parallel_size}}) {
    if (size != 1)
      return unsupported(std::string(name) + " " + std::to_string(size) + ": crosspoint serve runs on one GPU");
  }
  if (flags.max_logprobs != 20)
    return unsupported("--max-logprobs " + std::to_string(flags.max_logprobs) +
                       ": crosspoint's limit is fixed at 20 (vLLM's default)");
  return Status::ok();
}

}  // namespace crosspoint
