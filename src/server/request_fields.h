// Every field of a completions or chat-completions request body the OpenAI API or vLLM
// defines, and what crosspoint does with it: honours it, refuses it (400 naming the field)
// unless its value is one that changes nothing, or ignores it because it cannot change the
// output. Fields in no table are ignored and reported back so the server can log each name once,
// as vLLM does. docs/serving.md's field table lists the same rows (a test keeps them equal).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "server/api_error.h"

namespace crosspoint {

enum class ApiEndpoint { kCompletions, kChatCompletions };

enum class FieldUse {
  kHonoured,  // parsed and acted on (openai_request.cc)
  kRefused,   // 400 unless the value is a no-op (null, the default, an empty list, ...)
  kIgnored,   // accepted and dropped: it cannot change what is generated
};

struct RequestField {
  const char* name;
  bool completions;  // defined on /v1/completions
  bool chat;         // defined on /v1/chat/completions
  FieldUse use;
  // kRefused: true when the value changes nothing (then the field is accepted).
  bool (*is_no_op)(const nlohmann::json& value);
  const char* note;  // what crosspoint does, for errors and docs/serving.md
};

// The table, in the order docs/serving.md lists it.
std::span<const RequestField> request_fields();

// The 400 for the first refused field of body with an effective value; the names of fields in
// no table go to unknown (when given).
std::optional<ApiError> check_request_fields(const nlohmann::json& body, ApiEndpoint endpoint,
                                             std::vector<std::string>* unknown);

}  // namespace crosspoint
