#include "bench/request_body.h"

#include <nlohmann/json.hpp>

namespace crosspoint::bench {

namespace {

std::string finish_body(const RequestBodyOptions& options, nlohmann::ordered_json& body) {
  body["stream"] = true;
  body["stream_options"] = {{"include_usage", true}};
  if (options.ignore_eos) body["ignore_eos"] = true;
  if (options.temperature && !options.extra_body.contains("temperature")) body["temperature"] = *options.temperature;
  if (options.extra_body.is_object()) {
    for (const auto& [key, value] : options.extra_body.items()) body[key] = value;
  }
  return body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

nlohmann::ordered_json sampling_extra_body(const std::optional<double>& top_p, const std::optional<int>& top_k,
                                           const std::optional<double>& min_p, const std::optional<double>& temperature,
                                           const std::optional<double>& frequency_penalty,
                                           const std::optional<double>& presence_penalty,
                                           const std::optional<double>& repetition_penalty,
                                           const nlohmann::ordered_json& extra_body) {
  nlohmann::ordered_json body = nlohmann::ordered_json::object();
  if (top_p) body["top_p"] = *top_p;
  if (top_k) body["top_k"] = *top_k;
  if (min_p) body["min_p"] = *min_p;
  if (temperature) body["temperature"] = *temperature;
  if (frequency_penalty) body["frequency_penalty"] = *frequency_penalty;
  if (presence_penalty) body["presence_penalty"] = *presence_penalty;
  if (repetition_penalty) body["repetition_penalty"] = *repetition_penalty;
  if (extra_body.is_object()) {
    for (const auto& [key, value] : extra_body.items()) body[key] = value;
  }
  return body;
}

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
  if (options.logprobs) body["logprobs"] = *options.logprobs;
  return finish_body(options, body);
}

}  // namespace crosspoint::bench
