#include "server/openai_response.h"

#include <random>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace crosspoint {
namespace {

using json = nlohmann::json;

std::string dump(const json& j) {
  // Invalid UTF-8 never reaches here (the decoder replaces it), but never throw on it.
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

json usage_object(const TokenUsage& usage) {
  return {{"prompt_tokens", usage.prompt_tokens},
          {"total_tokens", usage.prompt_tokens + usage.completion_tokens},
          {"completion_tokens", usage.completion_tokens},
          {"prompt_tokens_details", nullptr}};
}

json stop_reason(const ChoiceEnd* end) {
  if (end == nullptr) return nullptr;
  if (!end->stop_string.empty()) return end->stop_string;
  if (end->stop_token_id >= 0) return end->stop_token_id;
  return nullptr;
}

json base(const ResponseHeader& header, const char* object) {
  return {{"id", header.id}, {"object", object}, {"created", header.created_unix_s}, {"model", header.model}};
}

bool is_chat(const ResponseHeader& header) { return header.endpoint == ApiEndpoint::kChatCompletions; }

}  // namespace

std::string make_response_id(ApiEndpoint endpoint) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  return fmt::format("{}-{:016x}{:016x}", endpoint == ApiEndpoint::kChatCompletions ? "chatcmpl" : "cmpl", rng(),
                     rng());
}

std::string full_response_json(const ResponseHeader& header, std::span<const ChoiceResult> choices,
                               const TokenUsage& usage) {
  json body = base(header, is_chat(header) ? "chat.completion" : "text_completion");
  body["choices"] = json::array();
  for (size_t i = 0; i < choices.size(); ++i) {
    const ChoiceResult& c = choices[i];
    json choice = {{"index", i},
                   {"logprobs", c.logprobs},
                   {"finish_reason", c.end.finish_reason},
                   {"stop_reason", stop_reason(&c.end)}};
    if (!c.prompt_logprobs.is_null()) choice["prompt_logprobs"] = c.prompt_logprobs;
    if (is_chat(header)) {
      choice["message"] = {{"role", "assistant"}, {"content", c.text}};
    } else {
      choice["text"] = c.text;
    }
    body["choices"].push_back(std::move(choice));
  }
  body["usage"] = usage_object(usage);
  return dump(body);
}

std::string chunk_json(const ResponseHeader& header, int32_t index, const std::string& delta, const ChoiceEnd* end,
                       const json& logprobs) {
  json choice = {{"index", index},
                 {"logprobs", logprobs},
                 {"finish_reason", end == nullptr ? json(nullptr) : json(end->finish_reason)},
                 {"stop_reason", stop_reason(end)}};
  json body;
  if (is_chat(header)) {
    body = base(header, "chat.completion.chunk");
    choice["delta"] = delta.empty() && end != nullptr ? json::object() : json{{"content", delta}};
  } else {
    body = base(header, "text_completion");
    choice["text"] = delta;
  }
  body["choices"] = json::array({choice});
  return dump(body);
}

std::string chat_role_chunk_json(const ResponseHeader& header, int32_t index) {
  json body = base(header, "chat.completion.chunk");
  body["choices"] = json::array({{{"index", index},
                                  {"delta", {{"role", "assistant"}, {"content", ""}}},
                                  {"logprobs", nullptr},
                                  {"finish_reason", nullptr}}});
  return dump(body);
}

std::string usage_chunk_json(const ResponseHeader& header, const TokenUsage& usage) {
  json body = base(header, is_chat(header) ? "chat.completion.chunk" : "text_completion");
  body["choices"] = json::array();
  body["usage"] = usage_object(usage);
  return dump(body);
}

std::string models_json(const std::string& served_model_name, const std::string& root, int64_t max_model_len,
                        int64_t created_unix_s) {
  json model = {{"id", served_model_name},
                {"object", "model"},
                {"created", created_unix_s},
                {"owned_by", "crosspoint"},
                {"root", root},
                {"parent", nullptr},
                {"max_model_len", max_model_len},
                {"permission", json::array()}};
  return dump(json{{"object", "list"}, {"data", json::array({model})}});
}

}  // namespace crosspoint
