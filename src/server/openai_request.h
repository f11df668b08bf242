// Parsing and validation of the bodies of POST /v1/completions and /v1/chat/completions
// (fields as vLLM accepts them, docs/reference/openai-api.md section 2). Every field is honoured
// or refused as request_fields.h lists; every rejection is an ApiError naming the field; fields
// in no list are ignored (and reported in unknown_fields) as vLLM does.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "request/sampling_params.h"
#include "server/api_error.h"
#include "server/generation_defaults.h"
#include "server/request_fields.h"
#include "tokenizer/chat_template.h"

namespace crosspoint {

struct OpenAiRequest {
  ApiEndpoint endpoint = ApiEndpoint::kCompletions;
  std::string model;  // empty when the request names none
  // Completions: the prompt as text, or as token ids when prompt_is_token_ids.
  std::string prompt_text;
  std::vector<int32_t> prompt_token_ids;
  bool prompt_is_token_ids = false;
  // Chat: the conversation.
  std::vector<ChatMessage> messages;
  ChatRenderOptions chat_options;  // add_generation_prompt, continue_final_message, chat_template_kwargs
  // vLLM's add_special_tokens: the tokenizer's post-processor tokens (e.g. Llama 3's BOS) around a
  // text prompt. Absent: true for completions, false for chat (its template writes them); never
  // added to a prompt given as token ids.
  std::optional<bool> add_special_tokens;
  bool adds_special_tokens() const { return add_special_tokens.value_or(endpoint == ApiEndpoint::kCompletions); }
  // max_tokens / max_completion_tokens; absent = 16 for completions, the generation config's
  // max_new_tokens or else the rest of the context for chat (decided once the prompt length is
  // known).
  std::optional<int64_t> max_tokens;
  bool max_tokens_is_default = false;  // from the generation config: capped by the context left, never refused
  // sampling.num_prompt_logprobs is set by prompt_logprobs, or by echo with logprobs (the larger).
  RequestSamplingParams sampling;
  bool has_seed = false;
  // Choices to generate (n), each its own engine sequence; choice i samples with seed + i
  // (choice_seed), as vLLM's parallel sampling does.
  int32_t n = 1;
  std::vector<std::string> stop;
  std::vector<int32_t> stop_token_ids;
  bool ignore_eos = false;
  bool include_stop_str_in_output = false;
  bool skip_special_tokens = true;
  bool stream = false;
  // Completions' echo: the prompt starts the returned text (and logprobs); with it max_tokens
  // may be 0 (the prompt alone is returned).
  bool echo = false;
  bool include_usage = false;               // stream_options.include_usage
  std::string cache_salt;                   // prefix caching: shared only with the same salt; empty = none
  std::vector<std::string> unknown_fields;  // body fields no table defines: ignored, logged once per name
};

// The most choices one request may ask for (n).
inline constexpr int32_t kMaxChoices = 128;
// The largest |logit_bias| value, as OpenAI documents it.
inline constexpr double kMaxLogitBias = 100.0;

// The seed of choice `index` of a request whose seed is `seed` (seed + index, wrapping).
uint64_t choice_seed(uint64_t seed, int32_t index);

// Parses body for endpoint. On failure returns the ApiError (400) and leaves out unspecified.
// defaults: the server's sampling defaults (--generation-config), used where the body leaves a
// field unset or null; none: vLLM's neutral ones.
std::optional<ApiError> parse_openai_request(const std::string& body, ApiEndpoint endpoint, OpenAiRequest* out,
                                             const GenerationDefaults& defaults = {});

// The chat prompt of a body: messages (roles system, user, assistant; "developer" read as
// system; content a string or text parts), add_generation_prompt, continue_final_message and
// chat_template_kwargs. Also what POST /tokenize reads when it is given messages.
std::optional<ApiError> read_chat_prompt(const nlohmann::json& body, std::vector<ChatMessage>* messages,
                                         ChatRenderOptions* options);

}  // namespace crosspoint
