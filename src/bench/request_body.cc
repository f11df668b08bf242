#include "bench/request_body.h"

#include <nlohmann/json.hpp>

namespace crosspoint::bench {

std::string build_request_body(const RequestBodyOptions& options, const SampleRequest& sample) {
  nlohmann::ordered_json body;
  body["model"] = options.model;
  if (options.endpoint == "/v1/chat/completions") {
    // vLLM sends the content as a one-part list; a plain string means the same in the
    // OpenAI API and more servers accept it.
    body["messages"] = nlohmann::ordered_json::array({{{"role", "user"}, {"content", sample.prompt}}});
    body["max_completion_tokens"] = sample.expected_output_len;
    body["max_tokens"] = sample.expected_output_len;  // for servers that read only the older name
  } else {
    body["prompt"] = sample.prompt;
    body["repetition_penalty"] = 1.0;
    body["max_tokens"] = sample.expected_output_len;
  }
  if (options.temperature) body["temperature"] = *options.temperature;
  if (options.ignore_eos) body["ignore_eos"] = true;
  body["stream"] = true;
  body["stream_options"] = {{"include_usage", true}};
  return body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace crosspoint::bench
