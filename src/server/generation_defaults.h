// The sampling defaults a server applies to requests that leave a field unset, from the model's
// generation_config.json as vLLM reads it (`--generation-config auto|vllm|DIR`,
// `--override-generation-config JSON`; vllm/config/model.py, get_diff_sampling_param):
//   auto   the model directory's generation_config.json (none there: no defaults)
//   vllm   no defaults (the neutral ones: temperature 1, top_p 1, top_k off, ...)
//   DIR    DIR/generation_config.json, which must exist
// Of the file, only temperature, top_k, top_p, min_p, repetition_penalty and max_new_tokens
// count, each as written (current transformers' to_diff_dict keeps them all, even a value equal
// to a library default: tests/fixtures/server/generation_config); the override's keys go on top.
// max_new_tokens becomes the default max_tokens of chat requests (completions keep 16, as
// vLLM's CompletionRequest does).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/status.h"

namespace crosspoint {

struct GenerationDefaults {
  std::optional<float> temperature;
  std::optional<float> top_p;
  std::optional<int32_t> top_k;  // -1 or 0: off
  std::optional<float> min_p;
  std::optional<float> repetition_penalty;
  std::optional<int64_t> max_tokens;
  std::string source;  // the file they came from, or "" for none

  bool empty() const { return !temperature && !top_p && !top_k && !min_p && !repetition_penalty && !max_tokens; }
  // "repetition_penalty=1.05 temperature=0.7 top_k=20 top_p=0.8" (the keys set, in vLLM's order).
  std::string describe() const;
};

// Reads the defaults for `mode` (auto, vllm or a directory) of the model in model_dir, then applies
// override_json (a JSON object of the same keys, "" for none). A malformed file, a key of the wrong
// type or out of vLLM's range, or a DIR without generation_config.json is an error naming it.
Result<GenerationDefaults> load_generation_defaults(const std::string& mode, const std::string& model_dir,
                                                    const std::string& override_json);

}  // namespace crosspoint
