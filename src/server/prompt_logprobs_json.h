// vLLM's `prompt_logprobs` of a completions choice: one entry per prompt token, null for the
// first (nothing precedes it), then {"<token id>": {"logprob", "rank", "decoded_token"}} holding
// the prompt token itself and the num_top most likely tokens at that position (ranks 1..num_top;
// a prompt token among them keeps one key, with its place in the top list, as vLLM's dict does).
// Logprobs of -inf are written -9999.0 (vLLM's clamp), an unknown one null.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>

#include "request/logprobs.h"
#include "tokenizer/tokenizer.h"

namespace crosspoint {

// prompt: [num_prompt_tokens - 1] the logprobs of prompt tokens 1.. (RequestOutput::prompt_logprobs).
nlohmann::json prompt_logprobs_json(const Tokenizer& tokenizer, std::span<const TokenLogprobs> prompt, int32_t num_top);

}  // namespace crosspoint
