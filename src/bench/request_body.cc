#include "bench/request_body.h"

#include <nlohmann/json.hpp>

namespace crosspoint::bench {

namespace {

std::string finish_body(const RequestBodyOptions& options, nlohmann::ordered_json& body) {
  if (options.temperature) body["temperature"] = *options.temperature;
  if (options.ignore_eos) body["ignore_eos"] = true;
  body["stream"] = true;
  body["stream_options"] = {{"include_usage", true}};
  return body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

std::string build_chat_body(const RequestBodyOptions& options, const std::vector<ChatMessage>& messages,
                            int max_tokens) {
  nlohmann::ordered_json body;
  body["model"] = options.model;
  // vLLM sends the content as a one-part list; a plain string means the same in the OpenAI API
  // and more servers accept it.
  body["messages"] = nlohmann::ordered_json::array();
  for (const ChatMessage& m : messages) body["messages"].push_back({{"role", m.role}, {"content", m.content}});
  body["max_completion_tokens"] = max_tokens;
  body["max_tokens"] = max_tokens;  // for servers that read only the older name
  return finish_body(options, body);
}

std::string build_request_body(const RequestBodyOptions& options, const SampleRequest& sample) {
  if (options.endpoint == "/v1/chat/completions")
    return build_chat_body(options, {{"user", sample.prompt}}, sample.expected_output_len);
  nlohmann::ordered_json body;
  body["model"] = options.model;
  body["prompt"] = sample.prompt;
  body["repetition_penalty"] = 1.0;
  body["max_tokens"] = sample.expected_output_len;
  return finish_body(options, body);
}

}  // namespace crosspoint::bench
