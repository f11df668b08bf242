#include "server/openai_request.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

#include "request/logprobs.h"

namespace crosspoint {
namespace {

using json = nlohmann::json;

// Each reader returns an error for a present, non-null field of the wrong type or value,
// and leaves *out alone when the field is absent or null.
std::optional<ApiError> read_bool(const json& body, const char* key, bool* out) {
  auto it = body.find(key);
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (!it->is_boolean()) return bad_request(std::string("'") + key + "' must be a boolean", key);
  *out = it->get<bool>();
  return std::nullopt;
}

// A boolean that stays unset when absent or null.
std::optional<ApiError> read_optional_bool(const json& body, const char* key, std::optional<bool>* out) {
  bool value = false;
  if (auto it = body.find(key); it == body.end() || it->is_null()) return std::nullopt;
  if (auto e = read_bool(body, key, &value)) return e;
  *out = value;
  return std::nullopt;
}

std::optional<ApiError> read_int(const json& body, const char* key, std::optional<int64_t>* out) {
  auto it = body.find(key);
  if (it == body.end() || it->is_null()) return std::nullopt;
  // JSON integers above 2^63 - 1 parse as unsigned, and is_number_integer() is true for them
  // too: read as int64 they would wrap to negative numbers.
  if (it->is_number_unsigned() && it->get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return bad_request(std::string("'") + key + "' is out of range: " + std::to_string(it->get<uint64_t>()) +
                           " is above the largest accepted integer, " +
                           std::to_string(std::numeric_limits<int64_t>::max()),
                       key);
  }
  if (it->is_number_integer()) {
    *out = it->get<int64_t>();
    return std::nullopt;
  }
  if (it->is_number_float()) {
    const double v = it->get<double>();
    if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 9e15) {
      *out = static_cast<int64_t>(v);
      return std::nullopt;
    }
  }
  return bad_request(std::string("'") + key + "' must be an integer", key);
}

std::optional<ApiError> read_number(const json& body, const char* key, std::optional<double>* out) {
  auto it = body.find(key);
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (!it->is_number()) return bad_request(std::string("'") + key + "' must be a number", key);
  const double v = it->get<double>();
  if (!std::isfinite(v)) return bad_request(std::string("'") + key + "' must be finite", key);
  *out = v;
  return std::nullopt;
}

std::optional<ApiError> read_token_ids(const json& array, const char* key, std::vector<int32_t>* out) {
  for (const auto& id : array) {
    const bool in_range = id.is_number_unsigned() ? id.get<uint64_t>() <= std::numeric_limits<int32_t>::max()
                                                  : id.is_number_integer() && id.get<int64_t>() >= 0 &&
                                                        id.get<int64_t>() <= std::numeric_limits<int32_t>::max();
    if (!in_range) { return bad_request(std::string("'") + key + "' must hold non-negative integer token ids", key); }
    out->push_back(static_cast<int32_t>(id.get<int64_t>()));
  }
  return std::nullopt;
}

std::optional<ApiError> read_prompt(const json& body, OpenAiRequest* out) {
  auto it = body.find("prompt");
  if (it == body.end() || it->is_null()) return bad_request("'prompt' is required", "prompt");
  const json* prompt = &*it;
  // A batch of one prompt is accepted; several are not (use one request per prompt).
  if (prompt->is_array() && !prompt->empty() && (prompt->front().is_string() || prompt->front().is_array())) {
    if (prompt->size() != 1) return bad_request("only one prompt per request is supported", "prompt");
    prompt = &prompt->front();
  }
  if (prompt->is_string()) {
    out->prompt_text = prompt->get<std::string>();
    if (out->prompt_text.empty()) return bad_request("'prompt' must not be empty", "prompt");
    return std::nullopt;
  }
  if (prompt->is_array()) {
    if (prompt->empty()) return bad_request("'prompt' must not be empty", "prompt");
    out->prompt_is_token_ids = true;
    return read_token_ids(*prompt, "prompt", &out->prompt_token_ids);
  }
  return bad_request("'prompt' must be a string, a list of strings, or a list of token ids", "prompt");
}

std::optional<ApiError> read_messages(const json& body, std::vector<ChatMessage>* out) {
  auto it = body.find("messages");
  if (it == body.end() || !it->is_array() || it->empty()) {
    return bad_request("'messages' must be a non-empty list", "messages");
  }
  for (const auto& m : *it) {
    if (!m.is_object()) return bad_request("each message must be an object", "messages");
    auto role = m.find("role");
    if (role == m.end() || !role->is_string()) return bad_request("each message needs a string 'role'", "messages");
    const std::string r = role->get<std::string>();
    if (r != "system" && r != "user" && r != "assistant" && r != "developer") {
      return bad_request("unsupported message role '" + r + "'", "messages");
    }
    ChatMessage message;
    message.role = r == "developer" ? "system" : r;
    auto content = m.find("content");
    if (content == m.end() || content->is_null()) {
      message.content = "";
    } else if (content->is_string()) {
      message.content = content->get<std::string>();
    } else if (content->is_array()) {
      for (const auto& part : *content) {
        if (!part.is_object() || part.value("type", "") != "text" || !part.contains("text") ||
            !part["text"].is_string()) {
          return bad_request("only text content parts ({\"type\":\"text\",\"text\":...}) are supported", "messages");
        }
        message.content += part["text"].get<std::string>();
      }
    } else {
      return bad_request("message 'content' must be a string or a list of text parts", "messages");
    }
    out->push_back(std::move(message));
  }
  return std::nullopt;
}

std::optional<ApiError> read_stop(const json& body, OpenAiRequest* out) {
  auto it = body.find("stop");
  if (it == body.end() || it->is_null()) {
    // no stop strings
  } else if (it->is_string()) {
    out->stop.push_back(it->get<std::string>());
  } else if (it->is_array()) {
    for (const auto& s : *it) {
      if (!s.is_string()) return bad_request("'stop' must be a string or a list of strings", "stop");
      out->stop.push_back(s.get<std::string>());
    }
  } else {
    return bad_request("'stop' must be a string or a list of strings", "stop");
  }
  auto ids = body.find("stop_token_ids");
  if (ids != body.end() && !ids->is_null()) {
    if (!ids->is_array()) return bad_request("'stop_token_ids' must be a list of integers", "stop_token_ids");
    return read_token_ids(*ids, "stop_token_ids", &out->stop_token_ids);
  }
  return std::nullopt;
}

// presence_penalty and frequency_penalty in [-2, 2], repetition_penalty above 0, min_p in
// [0, 1]: vLLM's ranges (vllm/sampling_params.py).
std::optional<ApiError> read_penalties(const json& body, OpenAiRequest* out) {
  std::optional<double> presence, frequency, repetition, min_p;
  if (auto e = read_number(body, "presence_penalty", &presence)) return e;
  if (auto e = read_number(body, "frequency_penalty", &frequency)) return e;
  if (auto e = read_number(body, "repetition_penalty", &repetition)) return e;
  if (auto e = read_number(body, "min_p", &min_p)) return e;
  if (presence) {
    if (*presence < -2 || *presence > 2)
      return bad_request("'presence_penalty' must be in [-2, 2], got " + std::to_string(*presence), "presence_penalty");
    out->sampling.presence_penalty = static_cast<float>(*presence);
  }
  if (frequency) {
    if (*frequency < -2 || *frequency > 2)
      return bad_request("'frequency_penalty' must be in [-2, 2], got " + std::to_string(*frequency),
                         "frequency_penalty");
    out->sampling.frequency_penalty = static_cast<float>(*frequency);
  }
  if (repetition) {
    if (*repetition <= 0 || static_cast<float>(*repetition) <= 0.0f)
      return bad_request("'repetition_penalty' must be greater than 0, got " + std::to_string(*repetition),
                         "repetition_penalty");
    out->sampling.repetition_penalty = static_cast<float>(*repetition);
  }
  if (min_p) {
    if (*min_p < 0 || *min_p > 1)
      return bad_request("'min_p' must be in [0, 1], got " + std::to_string(*min_p), "min_p");
    out->sampling.min_p = static_cast<float>(*min_p);
  }
  return std::nullopt;
}

std::optional<ApiError> read_sampling(const json& body, OpenAiRequest* out) {
  std::optional<double> temperature, top_p;
  std::optional<int64_t> top_k, seed;
  if (auto e = read_number(body, "temperature", &temperature)) return e;
  if (auto e = read_number(body, "top_p", &top_p)) return e;
  if (auto e = read_int(body, "top_k", &top_k)) return e;
  if (auto e = read_int(body, "seed", &seed)) return e;
  if (temperature) {
    if (*temperature < 0)
      return bad_request("'temperature' must be non-negative, got " + std::to_string(*temperature), "temperature");
    out->sampling.temperature = static_cast<float>(*temperature);
  }
  if (top_p) {
    if (*top_p <= 0 || *top_p > 1)
      return bad_request("'top_p' must be in (0, 1], got " + std::to_string(*top_p), "top_p");
    out->sampling.top_p = static_cast<float>(*top_p);
  }
  if (top_k) {
    if (*top_k < -1)
      return bad_request("'top_k' must be -1, 0 (off) or positive, got " + std::to_string(*top_k), "top_k");
    out->sampling.top_k =
        *top_k <= 0 ? 0 : static_cast<int32_t>(std::min<int64_t>(*top_k, std::numeric_limits<int32_t>::max()));
  }
  if (seed) {
    out->has_seed = true;
    out->sampling.seed = static_cast<uint64_t>(*seed);
  }
  return read_penalties(body, out);
}

// Token id strings to biases. Ids are checked against the vocabulary once it is known (the server).
std::optional<ApiError> read_logit_bias(const json& body, OpenAiRequest* out) {
  auto it = body.find("logit_bias");
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (!it->is_object()) return bad_request("'logit_bias' must be an object of token ids to biases", "logit_bias");
  for (auto entry = it->begin(); entry != it->end(); ++entry) {
    const std::string& key = entry.key();
    const bool digits = !key.empty() && key.size() <= 10 &&
                        std::all_of(key.begin(), key.end(), [](char c) { return c >= '0' && c <= '9'; });
    const int64_t id = digits ? std::stoll(key) : -1;
    if (!digits || id > std::numeric_limits<int32_t>::max())
      return bad_request(
          "'logit_bias' keys must be token ids (non-negative integers as strings), got '" + key.substr(0, 32) + "'",
          "logit_bias");
    if (!entry->is_number() || !std::isfinite(entry->get<double>()))
      return bad_request("'logit_bias' values must be numbers, got one for token " + key, "logit_bias");
    const double bias = entry->get<double>();
    if (bias < -kMaxLogitBias || bias > kMaxLogitBias)
      return bad_request(
          "'logit_bias' values must be between -100 and 100, got " + std::to_string(bias) + " for token " + key,
          "logit_bias");
    out->sampling.logit_bias.push_back({static_cast<int32_t>(id), static_cast<float>(bias)});
  }
  return std::nullopt;
}

// n choices; best_of is accepted only when it equals n (no choices are generated and dropped).
// n > 1 needs sampling: vLLM refuses it with greedy decoding (every choice would be the same).
std::optional<ApiError> read_choices(const json& body, OpenAiRequest* out) {
  std::optional<int64_t> n, best_of;
  if (auto e = read_int(body, "n", &n)) return e;
  if (auto e = read_int(body, "best_of", &best_of)) return e;
  if (n) {
    if (*n < 1 || *n > kMaxChoices)
      return bad_request("'n' must be between 1 and " + std::to_string(kMaxChoices) + ", got " + std::to_string(*n),
                         "n");
    out->n = static_cast<int32_t>(*n);
  }
  if (best_of && *best_of != out->n)
    return bad_request("'best_of' is not supported by this server unless it equals n (" + std::to_string(out->n) +
                           "), got " + std::to_string(*best_of),
                       "best_of");
  if (out->n > 1 && out->sampling.is_greedy())
    return bad_request("'n' must be 1 when using greedy sampling (temperature 0), got " + std::to_string(out->n), "n");
  return std::nullopt;
}

// max_tokens 0 is allowed with echo (the prompt alone comes back), as OpenAI and vLLM allow it.
std::optional<ApiError> read_max_tokens(const json& body, ApiEndpoint endpoint, OpenAiRequest* out) {
  std::optional<int64_t> max_tokens, max_completion_tokens;
  if (auto e = read_int(body, "max_tokens", &max_tokens)) return e;
  if (auto e = read_int(body, "max_completion_tokens", &max_completion_tokens)) return e;
  if (max_completion_tokens) max_tokens = max_completion_tokens;
  const int64_t least = out->echo ? 0 : 1;
  if (max_tokens && *max_tokens < least) {
    return bad_request("'max_tokens' must be at least " + std::to_string(least) +
                           (out->echo ? "" : " (0 only with echo)") + ", got " + std::to_string(*max_tokens),
                       "max_tokens");
  }
  if (!max_tokens && endpoint == ApiEndpoint::kCompletions) max_tokens = 16;
  if (max_tokens) {  // else chat keeps the generation config's, if any
    out->max_tokens = max_tokens;
    out->max_tokens_is_default = false;
  }
  return std::nullopt;
}

std::optional<ApiError> read_streaming(const json& body, OpenAiRequest* out) {
  if (auto e = read_bool(body, "stream", &out->stream)) return e;
  auto options = body.find("stream_options");
  if (options == body.end() || options->is_null()) return std::nullopt;
  if (!out->stream) return bad_request("'stream_options' is only allowed when 'stream' is true", "stream_options");
  if (!options->is_object()) return bad_request("'stream_options' must be an object", "stream_options");
  out->include_usage = true;  // vLLM's default once stream_options is given
  if (auto e = read_bool(*options, "include_usage", &out->include_usage)) return e;
  bool continuous = false;
  if (auto e = read_bool(*options, "continuous_usage_stats", &continuous)) return e;
  if (continuous)
    return bad_request("'stream_options.continuous_usage_stats' is not supported by this server (refused unless false)",
                       "stream_options");
  return std::nullopt;
}

// Completions: `logprobs` is the number of top logprobs (null = none). Chat: `logprobs` is a
// boolean and `top_logprobs` the number; a positive top_logprobs needs logprobs: true (vLLM's rule).
std::optional<ApiError> read_logprobs(const json& body, ApiEndpoint endpoint, OpenAiRequest* out) {
  const std::string range = "between 0 and " + std::to_string(kMaxTopLogprobs);
  std::optional<int64_t> num;
  if (endpoint == ApiEndpoint::kCompletions) {
    if (auto e = read_int(body, "logprobs", &num)) return e;
    if (!num) return std::nullopt;
    if (*num < 0 || *num > kMaxTopLogprobs)
      return bad_request("'logprobs' must be " + range + ", got " + std::to_string(*num), "logprobs");
    out->sampling.num_logprobs = static_cast<int32_t>(*num);
    return std::nullopt;
  }
  bool wanted = false;
  if (auto e = read_bool(body, "logprobs", &wanted)) return e;
  if (auto e = read_int(body, "top_logprobs", &num)) return e;
  if (num && (*num < 0 || *num > kMaxTopLogprobs))
    return bad_request("'top_logprobs' must be " + range + ", got " + std::to_string(*num), "top_logprobs");
  if (num && *num > 0 && !wanted) return bad_request("'top_logprobs' needs 'logprobs' to be true", "top_logprobs");
  if (wanted) out->sampling.num_logprobs = num ? static_cast<int32_t>(*num) : 0;
  return std::nullopt;
}

// chat_template_kwargs: null or absent, else an object of template variables that leaves the
// ones the renderer sets alone.
std::optional<ApiError> read_chat_template_kwargs(const json& body, ChatRenderOptions* options) {
  auto kwargs = body.find("chat_template_kwargs");
  if (kwargs == body.end() || kwargs->is_null()) return std::nullopt;
  if (!kwargs->is_object()) return bad_request("'chat_template_kwargs' must be an object", "chat_template_kwargs");
  for (const char* reserved : {"messages", "add_generation_prompt", "bos_token", "eos_token"}) {
    if (kwargs->contains(reserved))
      return bad_request(std::string("'chat_template_kwargs' cannot set '") + reserved + "'", "chat_template_kwargs");
  }
  options->kwargs = *kwargs;
  return std::nullopt;
}

// cache_salt: null or absent (no salt), else a non-empty string (vLLM's rule and message).
std::optional<ApiError> read_cache_salt(const json& body, OpenAiRequest* out) {
  auto salt = body.find("cache_salt");
  if (salt == body.end() || salt->is_null()) return std::nullopt;
  if (!salt->is_string() || salt->get_ref<const std::string&>().empty()) {
    return bad_request("Parameter 'cache_salt' must be a non-empty string if provided.", "cache_salt");
  }
  out->cache_salt = salt->get<std::string>();
  return std::nullopt;
}

// Completions: `echo` (a boolean) and vLLM's `prompt_logprobs` (0..20, null = none, not with
// stream); echo with logprobs asks for the prompt's logprobs too. Chat: neither is honoured.
std::optional<ApiError> read_echo(const json& body, ApiEndpoint endpoint, OpenAiRequest* out) {
  bool echo = false;
  if (auto e = read_bool(body, "echo", &echo)) return e;
  std::optional<int64_t> num;
  if (auto e = read_int(body, "prompt_logprobs", &num)) return e;
  if (endpoint == ApiEndpoint::kChatCompletions) {
    if (echo)
      return bad_request("'echo' is not supported on chat completions by this server (refused unless false)", "echo");
    if (num)
      return bad_request("'prompt_logprobs' is not supported on chat completions by this server (refused unless null)",
                         "prompt_logprobs");
    return std::nullopt;
  }
  out->echo = echo;
  if (!num) return std::nullopt;
  if (*num < 0 || *num > kMaxTopLogprobs)
    return bad_request(
        "'prompt_logprobs' must be between 0 and " + std::to_string(kMaxTopLogprobs) + ", got " + std::to_string(*num),
        "prompt_logprobs");
  if (out->stream) return bad_request("'prompt_logprobs' is not available when 'stream' is true", "prompt_logprobs");
  out->sampling.num_prompt_logprobs = static_cast<int32_t>(*num);
  return std::nullopt;
}

}  // namespace

uint64_t choice_seed(uint64_t seed, int32_t index) { return seed + static_cast<uint64_t>(index); }

std::optional<ApiError> read_chat_prompt(const json& body, std::vector<ChatMessage>* messages,
                                         ChatRenderOptions* options) {
  if (auto e = read_messages(body, messages)) return e;
  if (auto e = read_bool(body, "add_generation_prompt", &options->add_generation_prompt)) return e;
  if (auto e = read_bool(body, "continue_final_message", &options->continue_final_message)) return e;
  if (options->continue_final_message && options->add_generation_prompt)
    return bad_request("'continue_final_message' needs 'add_generation_prompt': false", "continue_final_message");
  return read_chat_template_kwargs(body, options);
}

// The server's defaults, before the body's fields overwrite them.
void apply_generation_defaults(const GenerationDefaults& d, ApiEndpoint endpoint, OpenAiRequest* out) {
  if (d.temperature) out->sampling.temperature = *d.temperature;
  if (d.top_p) out->sampling.top_p = *d.top_p;
  if (d.top_k) out->sampling.top_k = *d.top_k <= 0 ? 0 : *d.top_k;
  if (d.min_p) out->sampling.min_p = *d.min_p;
  if (d.repetition_penalty) out->sampling.repetition_penalty = *d.repetition_penalty;
  if (d.max_tokens && endpoint == ApiEndpoint::kChatCompletions) {
    out->max_tokens = *d.max_tokens;
    out->max_tokens_is_default = true;
  }
}

std::optional<ApiError> parse_openai_request(const std::string& body_text, ApiEndpoint endpoint, OpenAiRequest* out,
                                             const GenerationDefaults& defaults) {
  const json body = json::parse(body_text, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded()) return bad_request("the request body is not valid JSON");
  if (!body.is_object()) return bad_request("the request body must be a JSON object");
  OpenAiRequest request;
  request.endpoint = endpoint;
  apply_generation_defaults(defaults, endpoint, &request);
  if (auto e = check_request_fields(body, endpoint, &request.unknown_fields)) return e;
  auto model = body.find("model");
  if (model != body.end() && !model->is_null()) {
    if (!model->is_string()) return bad_request("'model' must be a string", "model");
    request.model = model->get<std::string>();
  }
  if (endpoint == ApiEndpoint::kCompletions) {
    if (auto e = read_prompt(body, &request)) return e;
  } else {
    if (auto e = read_chat_prompt(body, &request.messages, &request.chat_options)) return e;
  }
  if (auto e = read_optional_bool(body, "add_special_tokens", &request.add_special_tokens)) return e;
  if (auto e = read_bool(body, "stream", &request.stream)) return e;
  if (auto e = read_echo(body, endpoint, &request)) return e;
  if (auto e = read_max_tokens(body, endpoint, &request)) return e;
  if (auto e = read_sampling(body, &request)) return e;
  if (auto e = read_logit_bias(body, &request)) return e;
  if (auto e = read_choices(body, &request)) return e;
  if (auto e = read_stop(body, &request)) return e;
  if (auto e = read_bool(body, "ignore_eos", &request.ignore_eos)) return e;
  if (auto e = read_bool(body, "include_stop_str_in_output", &request.include_stop_str_in_output)) return e;
  if (auto e = read_bool(body, "skip_special_tokens", &request.skip_special_tokens)) return e;
  if (auto e = read_streaming(body, &request)) return e;
  if (auto e = read_logprobs(body, endpoint, &request)) return e;
  if (auto e = read_cache_salt(body, &request)) return e;
  if (request.echo && request.sampling.num_logprobs >= 0)  // vLLM: the echoed prompt's logprobs, too
    request.sampling.num_prompt_logprobs =
        std::max(request.sampling.num_prompt_logprobs, request.sampling.num_logprobs);
  *out = std::move(request);
  return std::nullopt;
}

}  // namespace crosspoint
