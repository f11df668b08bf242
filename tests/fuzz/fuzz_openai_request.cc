// Request bodies of the OpenAI server: the first byte picks the route (POST /v1/completions,
// /v1/chat/completions, /tokenize, /detokenize), the rest is the body. A chat request that
// parses is rendered through the chat template as the server does.
#include <cstddef>
#include <cstdint>
#include <string>

#include "server/openai_request.h"
#include "server/tokenize_request.h"
#include "tokenizer/chat_template.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace crosspoint;
  if (size == 0) return 0;
  const std::string body(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 4) {
    case 0:
    case 1: {
      const ApiEndpoint endpoint = data[0] % 4 == 0 ? ApiEndpoint::kCompletions : ApiEndpoint::kChatCompletions;
      OpenAiRequest request;
      if (auto error = parse_openai_request(body, endpoint, &request)) {
        (void)error->to_json();
        return 0;
      }
      if (endpoint == ApiEndpoint::kChatCompletions) {
        (void)apply_chat_template(ChatTemplate{}, request.messages, request.chat_options);
      }
      return 0;
    }
    case 2: {
      TokenizeRequest request;
      if (auto error = parse_tokenize_request(body, &request)) (void)error->to_json();
      return 0;
    }
    default: {
      DetokenizeRequest request;
      if (auto error = parse_detokenize_request(body, /*vocab_size=*/49152, &request)) {
        (void)error->to_json();
        return 0;
      }
      for (int32_t id : request.tokens) {
        if (id < 0 || id >= 49152) __builtin_trap();
      }
      return 0;
    }
  }
}
