// The JSON body of one streamed request, as vLLM's openai / openai-chat request functions
// build it: always streaming with stream_options.include_usage so the server reports exact
// token counts; temperature only when given; ignore_eos only when enabled.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "bench/sample_request.h"

namespace crosspoint::bench {

struct RequestBodyOptions {
  std::string endpoint;  // /v1/completions or /v1/chat/completions
  std::string model;
  std::optional<double> temperature;
  bool ignore_eos = false;
};

std::string build_request_body(const RequestBodyOptions& options, const SampleRequest& sample);

// One message of a chat request.
struct ChatMessage {
  std::string role;  // "user" or "assistant"
  std::string content;
};

// A chat-completions body with these messages (a multi-turn conversation's history and its
// next user turn) and max_tokens.
std::string build_chat_body(const RequestBodyOptions& options, const std::vector<ChatMessage>& messages,
                            int max_tokens);

}  // namespace crosspoint::bench
