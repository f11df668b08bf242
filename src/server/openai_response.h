// JSON bodies of OpenAI responses and SSE chunks (docs/reference/openai-api.md sections 3,
// 4 and 6), one function per shape.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>
#include <string>

#include "server/openai_request.h"

namespace crosspoint {

// The fields shared by every response and chunk of one request.
struct ResponseHeader {
  std::string id;  // "cmpl-<hex>" or "chatcmpl-<hex>"
  int64_t created_unix_s = 0;
  std::string model;
  ApiEndpoint endpoint = ApiEndpoint::kCompletions;
};

struct TokenUsage {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
};

// Why a choice ended, as OpenAI spells it ("stop", "length", "abort"), and vLLM's
// stop_reason: the matched stop string, or the stop token id, or null.
struct ChoiceEnd {
  std::string finish_reason;
  std::string stop_string;     // set when a stop string matched
  int32_t stop_token_id = -1;  // set when a stop_token_ids entry matched
};

// A random request id with the endpoint's prefix.
std::string make_response_id(ApiEndpoint endpoint);

// One finished choice of a non-streaming response.
struct ChoiceResult {
  std::string text;
  ChoiceEnd end;
  nlohmann::json logprobs;  // the choice's "logprobs" value (server/logprobs_json.h), null when not asked for
  // The choice's vLLM "prompt_logprobs" (server/prompt_logprobs_json.h), left out when null.
  nlohmann::json prompt_logprobs;
};

// choices[i] is the choice with index i.
std::string full_response_json(const ResponseHeader& header, std::span<const ChoiceResult> choices,
                               const TokenUsage& usage);
// One SSE data payload with a text delta of choice `index` (and the logprobs of its tokens);
// end == nullptr while the choice goes on.
std::string chunk_json(const ResponseHeader& header, int32_t index, const std::string& delta, const ChoiceEnd* end,
                       const nlohmann::json& logprobs = nullptr);
// The first chat chunk of choice `index`: {"role":"assistant","content":""}.
std::string chat_role_chunk_json(const ResponseHeader& header, int32_t index);
// The usage chunk sent before [DONE] when stream_options.include_usage is set.
std::string usage_chunk_json(const ResponseHeader& header, const TokenUsage& usage);
std::string models_json(const std::string& served_model_name, const std::string& root, int64_t max_model_len,
                        int64_t created_unix_s);

}  // namespace crosspoint
