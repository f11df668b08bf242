#include "server/input_processor.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include <nlohmann/json.hpp>

#include "common/mix64.h"
#include "server/tokenize_request.h"

namespace crosspoint {

std::optional<Route> post_route(std::string_view path) {
  if (path == "/v1/completions") return Route::kCompletions;
  if (path == "/v1/chat/completions") return Route::kChatCompletions;
  if (path == "/tokenize") return Route::kTokenize;
  if (path == "/detokenize") return Route::kDetokenize;
  return std::nullopt;
}

InputProcessor::InputProcessor(InputLimits limits, const Tokenizer& tokenizer, ChatTemplate chat_template)
    : limits_(std::move(limits)), tokenizer_(tokenizer), chat_template_(std::move(chat_template)) {}

std::optional<ApiError> InputProcessor::check_model(const std::string& model) const {
  if (!model.empty() && model != limits_.served_model_name) {
    return ApiError{404, "The model `" + model + "` does not exist.", "model"};
  }
  return std::nullopt;
}

// The ids the model can produce: its logits' width, and no more than the tokenizer knows.
int32_t InputProcessor::model_vocab_limit() const {
  const int32_t model_vocab = limits_.model_vocab_size;
  return model_vocab > 0 ? std::min(model_vocab, tokenizer_.vocab_size()) : tokenizer_.vocab_size();
}

std::optional<ApiError> InputProcessor::check_logit_bias(const OpenAiRequest& request) const {
  const int32_t limit = model_vocab_limit();
  for (const LogitBias& entry : request.sampling.logit_bias) {
    if (entry.token_id >= limit)
      return bad_request("'logit_bias' names token id " + std::to_string(entry.token_id) +
                             ", outside the model's vocabulary (" + std::to_string(limit) + " ids)",
                         "logit_bias");
  }
  return std::nullopt;
}

std::optional<ApiError> InputProcessor::prompt_ids(const OpenAiRequest& request, std::vector<int32_t>* ids) const {
  const bool chat = request.endpoint == ApiEndpoint::kChatCompletions;
  if (chat) {
    // Message contents are text: "<|im_start|>" typed by a user is not the special token.
    auto encoded = encode_chat(tokenizer_, chat_template_, request.messages, request.chat_options);
    if (!encoded.is_ok()) return bad_request(encoded.status().message(), "messages");
    *ids = std::move(encoded.value());
    if (request.adds_special_tokens()) *ids = tokenizer_.with_special_tokens(std::move(*ids));
  } else if (request.prompt_is_token_ids) {
    *ids = request.prompt_token_ids;
  } else {
    *ids = tokenizer_.encode(request.prompt_text, true);
    if (request.adds_special_tokens()) *ids = tokenizer_.with_special_tokens(std::move(*ids));
  }
  if (ids->empty()) return bad_request("the prompt encodes to no tokens", "prompt");
  // Ids the tokenizer knows but the model does not (a tokenizer larger than the model's
  // embedding) are the request's fault, never a failed batch.
  const int32_t limit = model_vocab_limit();
  for (int32_t id : *ids) {
    if (id >= limit) {
      return bad_request("token id " + std::to_string(id) + " of the prompt is outside the model's vocabulary (" +
                             std::to_string(limit) + " ids)",
                         chat ? "messages" : "prompt");
    }
  }
  const int64_t max_model_len = limits_.max_model_len;
  if (static_cast<int64_t>(ids->size()) >= max_model_len) {
    return bad_request("This model's maximum context length is " + std::to_string(max_model_len) +
                           " tokens. However, your request has " + std::to_string(ids->size()) +
                           " input tokens. Please reduce the length of the input messages.",
                       chat ? "messages" : "prompt");
  }
  return std::nullopt;
}

uint64_t InputProcessor::unseeded_request_seed() const {
  if (!limits_.seed) return std::chrono::steady_clock::now().time_since_epoch().count();
  return mix64(*limits_.seed + 0x9E3779B97F4A7C15ull * (unseeded_requests_.fetch_add(1) + 1));
}

PreparedRequest InputProcessor::prepare_tokenize(const std::string& body) const {
  PreparedRequest p;
  TokenizeRequest request;
  if ((p.error = parse_tokenize_request(body, &request))) return p;
  if ((p.error = check_model(request.model))) return p;
  std::vector<int32_t> ids;
  if (request.chat) {
    auto encoded = encode_chat(tokenizer_, chat_template_, request.messages, request.chat_options);
    if (!encoded.is_ok()) {
      p.error = bad_request(encoded.status().message(), "messages");
      return p;
    }
    ids = std::move(encoded.value());
  } else {
    ids = tokenizer_.encode(request.prompt, true);
  }
  if (request.adds_special_tokens()) ids = tokenizer_.with_special_tokens(std::move(ids));
  const nlohmann::json out = {{"tokens", ids}, {"count", ids.size()}, {"max_model_len", limits_.max_model_len}};
  p.reply = out.dump();
  return p;
}

PreparedRequest InputProcessor::prepare_detokenize(const std::string& body) const {
  PreparedRequest p;
  DetokenizeRequest request;
  if ((p.error = parse_detokenize_request(body, tokenizer_.vocab_size(), &request))) return p;
  p.reply = nlohmann::json{{"prompt", tokenizer_.decode(request.tokens)}}.dump(
      -1, ' ', false, nlohmann::json::error_handler_t::replace);
  return p;
}

PreparedRequest InputProcessor::prepare(Route route, const std::string& body) const {
  if (route == Route::kTokenize) return prepare_tokenize(body);
  if (route == Route::kDetokenize) return prepare_detokenize(body);
  PreparedRequest p;
  const ApiEndpoint endpoint = route == Route::kCompletions ? ApiEndpoint::kCompletions : ApiEndpoint::kChatCompletions;
  OpenAiRequest& request = p.request;
  if ((p.error = parse_openai_request(body, endpoint, &request, limits_.generation_defaults))) return p;
  if ((p.error = check_model(request.model))) return p;
  EngineRequest& engine_request = p.engine_request;
  if ((p.error = prompt_ids(request, &engine_request.prompt_token_ids))) return p;
  const int64_t prompt_len = static_cast<int64_t>(engine_request.prompt_token_ids.size());
  const int64_t max_model_len = limits_.max_model_len;
  int64_t max_tokens = request.max_tokens ? *request.max_tokens : max_model_len - prompt_len;
  if (request.max_tokens_is_default) max_tokens = std::min(max_tokens, max_model_len - prompt_len);  // as vLLM
  if (max_tokens > max_model_len) {  // keeps the int32 below honest; the engine says the rest
    p.error = bad_request("'max_tokens' or 'max_completion_tokens' is too large: " + std::to_string(max_tokens) +
                              ". This model's maximum context length is " + std::to_string(max_model_len) +
                              " tokens and your request has " + std::to_string(prompt_len) + " input tokens (" +
                              std::to_string(max_tokens) + " > " + std::to_string(max_model_len) + " - " +
                              std::to_string(prompt_len) + ").",
                          "max_tokens");
    return p;
  }
  if ((p.error = check_logit_bias(request))) return p;
  // max_tokens 0 (echo only): one token is generated and dropped, as vLLM does.
  engine_request.max_tokens = static_cast<int32_t>(std::max<int64_t>(max_tokens, 1));
  if (request.echo) {
    p.echo_text =
        request.prompt_is_token_ids ? tokenizer_.decode(engine_request.prompt_token_ids, false) : request.prompt_text;
  }
  engine_request.sampling = request.sampling;
  if (!request.has_seed) engine_request.sampling.seed = unseeded_request_seed();
  engine_request.stop_token_ids = request.stop_token_ids;
  engine_request.ignore_eos = request.ignore_eos;
  engine_request.cache_salt = request.cache_salt;
  return p;
}

}  // namespace crosspoint
