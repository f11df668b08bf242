// The `vllm serve` flags `crosspoint serve` takes besides its own, so that a pasted vLLM command
// line parses (vLLM's docs, "vllm serve"): the positional MODEL; flags with a meaning here
// (--seed, --tokenizer, --quantization naming the checkpoint's own method, --max-logprobs,
// --tensor-parallel-size 1, ...); flags that change nothing here (--trust-remote-code,
// --download-dir, ...), accepted with one log line each; and flags for features crosspoint lacks
// (LoRA, speculative decoding, more than one GPU, TLS, ...), refused with a message naming them.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace crosspoint {

struct VllmServeFlags {
  std::string positional_model;    // vllm serve MODEL
  std::optional<uint64_t> seed;    // --seed: requests without a seed draw theirs from it, in order
  std::string tokenizer;           // --tokenizer DIR: tokenizer (and chat template) from there
  std::string quantization;        // --quantization: must name the checkpoint's own method
  int max_logprobs = 20;           // --max-logprobs: crosspoint's limit is vLLM's default, 20
  int tensor_parallel_size = 1;    // -tp
  int pipeline_parallel_size = 1;  // -pp
  int data_parallel_size = 1;      // -dp
  std::map<std::string, std::string> given_without_effect;  // flag -> value ("" for a switch)
  std::map<std::string, std::string> given_unsupported;     // flag -> value
};

// argv with vLLM's multi-letter short flags (-tp, -pp, -dp, also as -tp=N) spelt long, which the
// command-line parser needs; everything else as given.
std::vector<std::string> expand_vllm_short_flags(int argc, char** argv);

// Registers the flags on serve's app, writing into flags.
void add_vllm_serve_flags(CLI::App& app, VllmServeFlags& flags);

// After parsing: the first unsupported flag given (or a parallel size above 1, or a
// --max-logprobs other than 20) as an error naming it.
Status check_vllm_serve_flags(const VllmServeFlags& flags);

}  // namespace crosspoint
