#include "server/request_fields.h"

#include <array>
#include <string_view>

namespace crosspoint {
namespace {

using json = nlohmann::json;

bool null_or_false(const json& v) { return v.is_null() || (v.is_boolean() && !v.get<bool>()); }
bool null_or_true(const json& v) { return v.is_null() || (v.is_boolean() && v.get<bool>()); }
bool null_only(const json& v) { return v.is_null(); }
bool null_or_empty(const json& v) {
  return v.is_null() || ((v.is_array() || v.is_object() || v.is_string()) && v.empty());
}
bool is_number(const json& v, double want) { return v.is_number() && v.get<double>() == want; }
bool null_or_zero(const json& v) { return v.is_null() || is_number(v, 0.0); }
bool null_or_one(const json& v) { return v.is_null() || is_number(v, 1.0); }
bool null_or_none_or_auto(const json& v) {
  return v.is_null() || (v.is_string() && (v.get<std::string>() == "none" || v.get<std::string>() == "auto"));
}
bool null_or_text_format(const json& v) {
  if (v.is_null()) return true;
  if (!v.is_object()) return false;
  auto type = v.find("type");
  return v.size() == 1 && type != v.end() && type->is_string() && type->get<std::string>() == "text";
}
bool null_or_text_modality(const json& v) {
  return v.is_null() || (v.is_array() && v.size() == 1 && (*v.begin()).is_string() && (*v.begin()) == "text");
}

// name, completions, chat, use, is_no_op, note
constexpr std::array kFields = {
    // The request itself.
    RequestField{"model", true, true, FieldUse::kHonoured, nullptr, "must name the served model (or be absent)"},
    RequestField{"prompt", true, false, FieldUse::kHonoured, nullptr, "text or token ids; one prompt per request"},
    RequestField{"messages", false, true, FieldUse::kHonoured, nullptr,
                 "system, user and assistant turns with text content"},
    RequestField{"add_generation_prompt", false, true, FieldUse::kHonoured, nullptr, "default true"},
    // Length and stopping.
    RequestField{"max_tokens", true, true, FieldUse::kHonoured, nullptr,
                 "default 16 (completions) or the rest of the context (chat)"},
    RequestField{"max_completion_tokens", true, true, FieldUse::kHonoured, nullptr, "same as max_tokens, wins over it"},
    RequestField{"stop", true, true, FieldUse::kHonoured, nullptr, "strings, matched across token boundaries"},
    RequestField{"stop_token_ids", true, true, FieldUse::kHonoured, nullptr, ""},
    RequestField{"ignore_eos", true, true, FieldUse::kHonoured, nullptr, ""},
    RequestField{"include_stop_str_in_output", true, true, FieldUse::kHonoured, nullptr, ""},
    RequestField{"min_tokens", true, true, FieldUse::kRefused, null_or_zero, "refused unless 0"},
    // Sampling.
    RequestField{"temperature", true, true, FieldUse::kHonoured, nullptr, "0 is greedy"},
    RequestField{"top_p", true, true, FieldUse::kHonoured, nullptr, ""},
    RequestField{"top_k", true, true, FieldUse::kHonoured, nullptr, "-1 or 0 is off"},
    RequestField{"seed", true, true, FieldUse::kHonoured, nullptr,
                 "the same seed gives the same tokens, alone or in a batch"},
    RequestField{"n", true, true, FieldUse::kHonoured, nullptr,
                 "1..128 choices, each its own sequence; choice i samples with seed + i; n > 1 needs temperature > 0"},
    RequestField{"best_of", true, true, FieldUse::kHonoured, nullptr, "accepted when equal to n; refused otherwise"},
    RequestField{"use_beam_search", true, true, FieldUse::kRefused, null_or_false, "refused unless false"},
    RequestField{"length_penalty", true, true, FieldUse::kRefused, null_or_one, "refused unless 1"},
    RequestField{"presence_penalty", true, true, FieldUse::kHonoured, nullptr,
                 "[-2, 2]; minus the penalty for each token already in the output"},
    RequestField{"frequency_penalty", true, true, FieldUse::kHonoured, nullptr,
                 "[-2, 2]; minus the penalty times the token's count in the output"},
    RequestField{"repetition_penalty", true, true, FieldUse::kHonoured, nullptr,
                 "above 0; tokens of the prompt and output: positive logits divided by it, negative multiplied"},
    RequestField{"min_p", true, true, FieldUse::kHonoured, nullptr,
                 "[0, 1]; after temperature, tokens below min_p times the top probability dropped"},
    RequestField{"typical_p", true, true, FieldUse::kRefused, null_or_one, "refused unless 1"},
    RequestField{"logit_bias", true, true, FieldUse::kHonoured, nullptr,
                 "token id -> bias in [-100, 100], added to the logit; ids outside the vocabulary refused"},
    RequestField{"bad_words", true, true, FieldUse::kRefused, null_or_empty, "refused unless empty"},
    RequestField{"allowed_token_ids", true, true, FieldUse::kRefused, null_or_empty, "refused unless empty"},
    // Output shape.
    RequestField{"stream", true, true, FieldUse::kHonoured, nullptr, "server-sent events"},
    RequestField{"stream_options", true, true, FieldUse::kHonoured, nullptr,
                 "include_usage honoured; continuous_usage_stats refused unless false"},
    RequestField{"logprobs", true, true, FieldUse::kHonoured, nullptr,
                 "completions: 0..20 top logprobs per token; chat: a boolean (with top_logprobs)"},
    RequestField{"top_logprobs", false, true, FieldUse::kHonoured, nullptr, "0..20; above 0 only with logprobs: true"},
    RequestField{"prompt_logprobs", true, true, FieldUse::kHonoured, nullptr,
                 "completions: 0..20, each prompt token's logprob and top logprobs in the choice's prompt_logprobs "
                 "(vLLM's shape), not with stream; chat: refused unless null"},
    RequestField{"echo", true, true, FieldUse::kHonoured, nullptr,
                 "completions: the text (and the logprobs) start with the prompt's; max_tokens 0 returns the prompt "
                 "alone; chat: refused unless false"},
    RequestField{"suffix", true, false, FieldUse::kRefused, null_or_empty, "refused unless empty"},
    RequestField{"skip_special_tokens", true, true, FieldUse::kHonoured, nullptr, "default true"},
    RequestField{"spaces_between_special_tokens", true, true, FieldUse::kRefused, null_or_true,
                 "refused unless true (special tokens are always joined as vLLM's default does)"},
    RequestField{"return_tokens_as_token_ids", true, true, FieldUse::kRefused, null_or_false, "refused unless false"},
    RequestField{"response_format", true, true, FieldUse::kRefused, null_or_text_format,
                 "refused unless {\"type\": \"text\"}"},
    RequestField{"modalities", false, true, FieldUse::kRefused, null_or_text_modality, "refused unless [\"text\"]"},
    RequestField{"audio", false, true, FieldUse::kRefused, null_only, "refused unless null"},
    // Structured output.
    RequestField{"structured_outputs", true, true, FieldUse::kRefused, null_only, "refused unless null"},
    RequestField{"guided_json", true, true, FieldUse::kRefused, null_only, "refused unless null"},
    RequestField{"guided_regex", true, true, FieldUse::kRefused, null_only, "refused unless null"},
    RequestField{"guided_choice", true, true, FieldUse::kRefused, null_only, "refused unless null"},
    RequestField{"guided_grammar", true, true, FieldUse::kRefused, null_only, "refused unless null"},
    RequestField{"guided_decoding_backend", true, true, FieldUse::kRefused, null_only, "refused unless null"},
    RequestField{"guided_whitespace_pattern", true, true, FieldUse::kRefused, null_only, "refused unless null"},
    // Tools.
    RequestField{"tools", false, true, FieldUse::kRefused, null_or_empty, "refused unless empty"},
    RequestField{"tool_choice", false, true, FieldUse::kRefused, null_or_none_or_auto,
                 "refused unless \"none\" or \"auto\" (no tools can be given)"},
    RequestField{"parallel_tool_calls", false, true, FieldUse::kIgnored, nullptr,
                 "ignored: without tools it changes nothing"},
    RequestField{"functions", false, true, FieldUse::kRefused, null_or_empty, "refused unless empty"},
    RequestField{"function_call", false, true, FieldUse::kRefused, null_or_none_or_auto,
                 "refused unless \"none\" or \"auto\""},
    // Prompt construction.
    RequestField{"add_special_tokens", true, true, FieldUse::kHonoured, nullptr,
                 "default true (completions: the tokenizer's post-processor tokens, e.g. Llama 3's BOS, around a "
                 "text prompt) or false (chat: its template writes them); never added to token ids"},
    RequestField{"truncate_prompt_tokens", true, true, FieldUse::kRefused, null_only, "refused unless null"},
    RequestField{"chat_template", false, true, FieldUse::kRefused, null_only,
                 "refused unless null: the model's template is used"},
    RequestField{"chat_template_kwargs", false, true, FieldUse::kHonoured, nullptr,
                 "an object of further template variables (e.g. enable_thinking for Qwen3)"},
    RequestField{"continue_final_message", false, true, FieldUse::kHonoured, nullptr,
                 "the prompt ends right after the last message's content; needs add_generation_prompt false"},
    RequestField{"documents", false, true, FieldUse::kRefused, null_or_empty, "refused unless empty"},
    RequestField{"mm_processor_kwargs", true, true, FieldUse::kRefused, null_or_empty, "refused unless empty"},
    RequestField{"reasoning_effort", false, true, FieldUse::kRefused, null_only, "refused unless null"},
    // Scheduling and bookkeeping.
    RequestField{"priority", true, true, FieldUse::kRefused, null_or_zero,
                 "refused unless 0: requests are served in arrival order"},
    RequestField{"prediction", false, true, FieldUse::kIgnored, nullptr,
                 "ignored: a latency hint that never changes the output"},
    RequestField{"cache_salt", true, true, FieldUse::kHonoured, nullptr,
                 "a non-empty string; cached prefix blocks are shared only among requests with the same salt "
                 "(mixed into the first block's hash, as vLLM does)"},
    RequestField{"request_id", true, true, FieldUse::kIgnored, nullptr, "ignored: the response carries its own id"},
    RequestField{"user", true, true, FieldUse::kIgnored, nullptr, "ignored"},
    RequestField{"metadata", true, true, FieldUse::kIgnored, nullptr, "ignored"},
    RequestField{"store", true, true, FieldUse::kIgnored, nullptr, "ignored: nothing is stored"},
    RequestField{"service_tier", true, true, FieldUse::kIgnored, nullptr, "ignored"},
};

}  // namespace

std::span<const RequestField> request_fields() { return kFields; }

std::optional<ApiError> check_request_fields(const json& body, ApiEndpoint endpoint,
                                             std::vector<std::string>* unknown) {
  const bool chat = endpoint == ApiEndpoint::kChatCompletions;
  for (auto it = body.begin(); it != body.end(); ++it) {
    const RequestField* field = nullptr;
    for (const RequestField& f : kFields) {
      if (it.key() == f.name && (chat ? f.chat : f.completions)) {
        field = &f;
        break;
      }
    }
    if (field == nullptr) {
      if (unknown != nullptr) unknown->push_back(it.key());
      continue;
    }
    if (field->use == FieldUse::kRefused && !field->is_no_op(it.value())) {
      return bad_request("'" + it.key() + "' is not supported by this server (" + field->note + ")", it.key());
    }
  }
  return std::nullopt;
}

}  // namespace crosspoint
