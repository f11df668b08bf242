#include "cli/bench_vllm_flags.h"

#include <array>

#include "common/log.h"

namespace crosspoint {
namespace {

// vllm bench serve flags that change nothing here. Value-taking, then switches.
constexpr std::array kWithoutEffectOptions = {"--tokenizer-mode", "--timeline-itl-thresholds", "--lora-assignment"};
constexpr std::array kWithoutEffectSwitches = {"--trust-remote-code", "--use-beam-search", "--profile", "--no-stream",
                                               "--no-reranker"};
// What each of them would have done, for the log line.
const std::map<std::string, std::string> kWhy = {
    {"--tokenizer-mode", "the tokenizer is read from --tokenizer's tokenizer.json"},
    {"--timeline-itl-thresholds", "there is no timeline plot"},
    {"--lora-assignment", "no LoRA modules are sent"},
    {"--trust-remote-code", "no model code is loaded"},
    {"--use-beam-search", "vLLM's benchmark ignores it too; requests sample as the server does"},
    {"--profile", "the server is not asked to start or stop a profiler"},
    {"--no-stream", "datasets are read from local files"},
    {"--no-reranker", "there is no reranking benchmark"}};
// Features crosspoint lacks. Value-taking (with the value that asks for nothing, if any), then
// switches.
const std::map<std::string, std::string> kUnsupportedOptions = {{"--lora-modules", ""},
                                                                {"--ready-check-timeout-sec", "0"},
                                                                {"--probe-request-rate", "0"},
                                                                {"--random-prefix-len", "0"},
                                                                {"--random-batch-size", "1"},
                                                                {"--hf-subset", ""},
                                                                {"--hf-split", ""},
                                                                {"--hf-name", ""},
                                                                {"--hf-output-len", ""},
                                                                {"--spec-bench-output-len", ""},
                                                                {"--spec-bench-category", ""},
                                                                {"--blazedit-min-distance", ""},
                                                                {"--blazedit-max-distance", ""},
                                                                {"--random-mm-base-items-per-request", ""},
                                                                {"--random-mm-num-mm-items-range-ratio", ""},
                                                                {"--random-mm-limit-mm-per-prompt", ""},
                                                                {"--random-mm-bucket-config", ""},
                                                                {"--chat-template-kwargs", ""}};
constexpr std::array kUnsupportedSwitches = {"--plot-timeline",         "--plot-dataset-stats",  "--self-timed",
                                             "--no-self-timed",         "--skip-tokenizer-init", "--insecure",
                                             "--enable-multimodal-chat"};

}  // namespace

std::vector<std::string> dash_vllm_flag_names(int argc, char** argv) {
  std::vector<std::string> out;
  for (int i = 0; i < argc; ++i) {
    std::string arg = argv[i];
    if (i > 0 && arg.rfind("--", 0) == 0) {
      const size_t end = std::min(arg.find('='), arg.size());
      for (size_t k = 2; k < end; ++k)
        if (arg[k] == '_') arg[k] = '-';
    }
    out.push_back(std::move(arg));
  }
  return out;
}

void add_vllm_bench_flags(CLI::App& app, VllmBenchFlags& flags) {
  auto ignored = app.add_option_group("vLLM flags without effect here (accepted, logged)");
  for (const char* name : kWithoutEffectOptions)
    ignored->add_option_function<std::string>(
        name, [&flags, name](const std::string& v) { flags.given_without_effect[name] = v; }, kWhy.at(name));
  for (const char* name : kWithoutEffectSwitches)
    ignored->add_flag_callback(name, [&flags, name] { flags.given_without_effect[name] = ""; }, kWhy.at(name));
  auto refused = app.add_option_group("vLLM flags for features crosspoint lacks (refused)");
  for (const auto& [name, harmless] : kUnsupportedOptions) {
    const std::string flag = name;
    refused
        ->add_option_function<std::vector<std::string>>(
            flag,
            [&flags, flag](const std::vector<std::string>& v) {
              std::string joined;
              for (const std::string& item : v) joined += (joined.empty() ? "" : " ") + item;
              flags.given_unsupported[flag] = joined;
            },
            harmless.empty() ? "refused" : "refused unless " + harmless)
        ->expected(1, -1);
  }
  for (const char* name : kUnsupportedSwitches)
    refused->add_flag_callback(name, [&flags, name] { flags.given_unsupported[name] = ""; }, "refused");
}

Status check_vllm_bench_flags(const VllmBenchFlags& flags) {
  std::string refused;
  for (const auto& [name, value] : flags.given_unsupported) {
    auto it = kUnsupportedOptions.find(name);
    if (it != kUnsupportedOptions.end() && !it->second.empty()) {
      char* end = nullptr;
      const double number = std::strtod(value.c_str(), &end);
      if (end != value.c_str() && *end == '\0' && number == std::strtod(it->second.c_str(), nullptr)) continue;
    }
    refused += (refused.empty() ? "" : ", ") + name + (value.empty() ? "" : " " + value);
  }
  if (!refused.empty())
    return unsupported(refused +
                       ": crosspoint bench serve has no such feature (docs/bench.md lists the vLLM flags it takes)");
  for (const auto& [name, value] : flags.given_without_effect)
    log_info("bench: {}{}: accepted, no effect here ({})", name, value.empty() ? "" : " " + value, kWhy.at(name));
  return Status::ok();
}

}  // namespace crosspoint
