// The `logprobs` object of a choice in OpenAI's two shapes, as vLLM fills them (docs/serving.md,
// "Logprobs"). Each token is named by itself decoded alone (special tokens included; bytes that
// are not valid UTF-8 on their own become U+FFFD, as Hugging Face's decode does); chat adds its
// raw bytes. Logprobs of -inf are written as -9999.0, an unknown one as null.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>

#include "request/logprobs.h"
#include "tokenizer/tokenizer.h"

namespace crosspoint {

// /v1/completions: {tokens, token_logprobs, top_logprobs: [{token: logprob}] (the chosen token
// and the num_top most likely: up to num_top + 1 keys), text_offset}; text_offset counts
// characters from initial_text_offset (the text already sent before these tokens).
nlohmann::json completion_logprobs_json(const Tokenizer& tokenizer, std::span<const TokenLogprobs> tokens,
                                        int64_t initial_text_offset);

// /v1/chat/completions: {content: [{token, logprob, bytes, top_logprobs: [{token, logprob,
// bytes}]}]}, top_logprobs being the num_top most likely tokens, most likely first.
nlohmann::json chat_logprobs_json(const Tokenizer& tokenizer, std::span<const TokenLogprobs> tokens);

// Characters (Unicode code points) in UTF-8 text: the unit of text_offset.
int64_t utf8_length(std::string_view text);

}  // namespace crosspoint
