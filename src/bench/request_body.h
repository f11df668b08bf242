// The JSON body of one streamed request, as vLLM's openai / openai-chat request functions
// build it: always streaming with stream_options.include_usage so the server reports exact
// token counts; ignore_eos only when enabled; then the extra body (the sampling flags that
// were given and --extra-body) merged in last, its keys replacing any of the same name, as
// vLLM's payload.update(extra_body).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/sample_request.h"

namespace crosspoint::bench {

struct RequestBodyOptions {
  std::string endpoint;  // /v1/completions or /v1/chat/completions
  std::string model;
  std::optional<double> temperature;  // put in the extra body's place when given
  bool ignore_eos = false;
  std::optional<int> logprobs;  // completions only (vLLM's openai request function)
  nlohmann::ordered_json extra_body = nlohmann::ordered_json::object();
};

// The extra body vLLM merges into every request: the sampling flags that were given, in vLLM's
// order (top_p, top_k, min_p, temperature, frequency_penalty, presence_penalty,
// repetition_penalty), then --extra-body's keys (which win).
nlohmann::ordered_json sampling_extra_body(const std::optional<double>& top_p, const std::optional<int>& top_k,
                                           const std::optional<double>& min_p, const std::optional<double>& temperature,
                                           const std::optional<double>& frequency_penalty,
                                           const std::optional<double>& presence_penalty,
                                           const std::optional<double>& repetition_penalty,
                                           const nlohmann::ordered_json& extra_body);

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
