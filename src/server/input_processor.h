// The server's input processor: one request body on one route becomes the error to answer
// with, the reply of /tokenize or /detokenize, or the request for the engine (parsed,
// validated, chat-templated, tokenised, its sampling seed settled). It reads only the body,
// the tokenizer, the chat template and fixed limits: no sockets and no engine, so it is tested
// on its own and runs on the server's preparation thread, off the event loop.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/engine_request.h"
#include "server/api_error.h"
#include "server/generation_defaults.h"
#include "server/openai_request.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace crosspoint {

enum class Route { kCompletions, kChatCompletions, kTokenize, kDetokenize };

// The route a POST path names (the four above), or none.
std::optional<Route> post_route(std::string_view path);

// What the processor needs to know of the server and the engine.
struct InputLimits {
  std::string served_model_name;  // requests naming another model get 404
  int64_t max_model_len = 0;      // prompt + completion tokens of one sequence
  int32_t model_vocab_size = 0;   // the model's logits width (0: the tokenizer's)
  GenerationDefaults generation_defaults;
  // --seed: requests without a seed get splitmix64 of it and their arrival number among such
  // requests; unset: a seed from the clock.
  std::optional<uint64_t> seed;
};

struct PreparedRequest {
  std::optional<ApiError> error;  // set: answer with it
  std::string reply;              // /tokenize and /detokenize: the 200 body
  OpenAiRequest request;          // generation routes: the parsed request
  EngineRequest engine_request;   // and what the engine runs (choice 0's seed)
  std::string echo_text;          // completions with echo: the prompt as text
};

class InputProcessor {
 public:
  InputProcessor(InputLimits limits, const Tokenizer& tokenizer, ChatTemplate chat_template);

  // Thread-compatible: one caller at a time (the seed counter follows arrival order).
  PreparedRequest prepare(Route route, const std::string& body) const;

  const InputLimits& limits() const { return limits_; }

 private:
  std::optional<ApiError> check_model(const std::string& model) const;
  int32_t model_vocab_limit() const;
  std::optional<ApiError> check_logit_bias(const OpenAiRequest& request) const;
  std::optional<ApiError> prompt_ids(const OpenAiRequest& request, std::vector<int32_t>* ids) const;
  uint64_t unseeded_request_seed() const;
  PreparedRequest prepare_tokenize(const std::string& body) const;
  PreparedRequest prepare_detokenize(const std::string& body) const;

  InputLimits limits_;
  const Tokenizer& tokenizer_;
  ChatTemplate chat_template_;
  mutable std::atomic<uint64_t> unseeded_requests_{0};
};

}  // namespace crosspoint
