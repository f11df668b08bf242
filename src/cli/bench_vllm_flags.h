// The `vllm bench serve` flags `crosspoint bench serve` takes besides the ones with a meaning
// here (cmd_bench.cc), so that a pasted vLLM command line parses: flags that change nothing here
// (--trust-remote-code, --tokenizer-mode, --use-beam-search, --profile, ...), accepted with one
// log line each; and flags for features crosspoint lacks (LoRA, multimodal and Hugging Face
// datasets, plots, trace timing, TLS without verification, ...), refused with a message naming
// them. Also vLLM's spelling of flags with '_' for '-' (its FlexibleArgumentParser accepts both).
#pragma once

#include <CLI/CLI.hpp>

#include <map>
#include <string>
#include <vector>

#include "common/status.h"

namespace crosspoint {

struct VllmBenchFlags {
  std::map<std::string, std::string> given_without_effect;  // flag -> value ("" for a switch)
  std::map<std::string, std::string> given_unsupported;     // flag -> value
};

// argv with every "--flag_name" (before any '=') spelt "--flag-name", as vLLM's parser reads it.
std::vector<std::string> dash_vllm_flag_names(int argc, char** argv);

// Registers the flags on bench serve's app, writing into flags.
void add_vllm_bench_flags(CLI::App& app, VllmBenchFlags& flags);

// After parsing: logs one line per flag without effect; the first unsupported flag given (one
// whose value asks for nothing, such as --ready-check-timeout-sec 0, passes) as an error naming
// it.
Status check_vllm_bench_flags(const VllmBenchFlags& flags);

}  // namespace crosspoint
