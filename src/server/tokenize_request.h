// Parsing and validation of the bodies of POST /tokenize ({"prompt": <string>, "model": ...}, or
// a chat's {"messages": [...], "add_generation_prompt": ..., "chat_template_kwargs": ...},
// whose rendered prompt is tokenised as a chat request's is) and POST /detokenize ({"tokens": [ids]}), vLLM's extra
// routes. A rejection is the ApiError (400) naming the field.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "server/api_error.h"
#include "tokenizer/chat_template.h"

namespace crosspoint {

struct TokenizeRequest {
  std::string prompt;
  bool chat = false;  // messages given: the chat template renders the prompt
  std::vector<ChatMessage> messages;
  ChatRenderOptions chat_options;
  std::string model;  // empty when the request names none (or not as a string)
  // vLLM's add_special_tokens: absent, true for a prompt and false for messages.
  std::optional<bool> add_special_tokens;
  bool adds_special_tokens() const { return add_special_tokens.value_or(!chat); }
};

struct DetokenizeRequest {
  std::vector<int32_t> tokens;  // each in [0, vocab_size)
};

std::optional<ApiError> parse_tokenize_request(const std::string& body, TokenizeRequest* out);
std::optional<ApiError> parse_detokenize_request(const std::string& body, int32_t vocab_size, DetokenizeRequest* out);

}  // namespace crosspoint
