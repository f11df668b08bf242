#include "server/tokenize_request.h"

#include <nlohmann/json.hpp>

#include "server/openai_request.h"

namespace crosspoint {

std::optional<ApiError> parse_tokenize_request(const std::string& body_text, TokenizeRequest* out) {
  const auto body = nlohmann::json::parse(body_text, nullptr, /*allow_exceptions=*/false);
  if (body.is_object() && body.contains("messages")) {
    if (body.contains("prompt")) return bad_request("/tokenize takes 'prompt' or 'messages', not both", "prompt");
    out->chat = true;
    if (auto e = read_chat_prompt(body, &out->messages, &out->chat_options)) return e;
  } else {
    auto prompt = body.is_object() ? body.find("prompt") : body.end();
    if (body.is_discarded() || !body.is_object() || prompt == body.end() || !prompt->is_string()) {
      return bad_request("/tokenize needs {\"prompt\": <string>} or {\"messages\": [...]}", "prompt");
    }
    out->prompt = prompt->get<std::string>();
  }
  auto model = body.find("model");
  if (model != body.end() && model->is_string()) out->model = model->get<std::string>();
  if (auto add = body.find("add_special_tokens"); add != body.end() && !add->is_null()) {
    if (!add->is_boolean()) return bad_request("'add_special_tokens' must be a boolean", "add_special_tokens");
    out->add_special_tokens = add->get<bool>();
  }
  return std::nullopt;
}

std::optional<ApiError> parse_detokenize_request(const std::string& body_text, int32_t vocab_size,
                                                 DetokenizeRequest* out) {
  const auto body = nlohmann::json::parse(body_text, nullptr, /*allow_exceptions=*/false);
  auto tokens = body.is_object() ? body.find("tokens") : body.end();
  if (body.is_discarded() || !body.is_object() || tokens == body.end() || !tokens->is_array()) {
    return bad_request("/detokenize needs {\"tokens\": [ids]}", "tokens");
  }
  out->tokens.clear();
  for (const auto& id : *tokens) {
    // Numbers above INT64_MAX read back negative here, so they are refused too.
    const bool in_range = id.is_number_integer() && id.get<int64_t>() >= 0 && id.get<int64_t>() < vocab_size;
    if (!in_range) return bad_request("'tokens' holds an id outside the vocabulary", "tokens");
    out->tokens.push_back(static_cast<int32_t>(id.get<int64_t>()));
  }
  return std::nullopt;
}

}  // namespace crosspoint
