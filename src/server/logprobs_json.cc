#include "server/logprobs_json.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace crosspoint {
namespace {

using json = nlohmann::json;

// vLLM's clamp: JSON has no -inf, and OpenAI uses -9999.0 for "impossible".
json logprob_value(double logprob) {
  if (std::isnan(logprob)) return nullptr;
  return std::max(logprob, -9999.0);
}

std::string token_text(const Tokenizer& tokenizer, int32_t id) {
  const int32_t ids[1] = {id};
  return tokenizer.decode(ids, /*skip_special=*/false);
}

json token_bytes(const Tokenizer& tokenizer, int32_t id) {
  json bytes = json::array();
  for (char c : tokenizer.token_bytes(id)) bytes.push_back(static_cast<int>(static_cast<unsigned char>(c)));
  return bytes;
}

}  // namespace

int64_t utf8_length(std::string_view text) {
  return std::count_if(text.begin(), text.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; });
}

json completion_logprobs_json(const Tokenizer& tokenizer, std::span<const TokenLogprobs> tokens,
                              int64_t initial_text_offset) {
  json out = {{"tokens", json::array()},
              {"token_logprobs", json::array()},
              {"top_logprobs", json::array()},
              {"text_offset", json::array()}};
  int64_t offset = initial_text_offset;
  for (const TokenLogprobs& t : tokens) {
    const std::string text = token_text(tokenizer, t.chosen.token_id);
    out["tokens"].push_back(text);
    out["text_offset"].push_back(offset);
    offset += utf8_length(text);
    out["token_logprobs"].push_back(logprob_value(t.chosen.logprob));
    if (std::isnan(t.chosen.logprob)) {  // not computed: vLLM reports no top entries either
      out["top_logprobs"].push_back(nullptr);
      continue;
    }
    // As vLLM builds it: the chosen token first, then the most likely ones (a token text seen
    // twice keeps the later value).
    json top = json::object();
    top[text] = logprob_value(t.chosen.logprob);
    for (const TokenLogprob& lp : t.top) top[token_text(tokenizer, lp.token_id)] = logprob_value(lp.logprob);
    out["top_logprobs"].push_back(std::move(top));
  }
  return out;
}

json chat_logprobs_json(const Tokenizer& tokenizer, std::span<const TokenLogprobs> tokens) {
  json content = json::array();
  for (const TokenLogprobs& t : tokens) {
    json top = json::array();
    for (const TokenLogprob& lp : t.top) {
      top.push_back({{"token", token_text(tokenizer, lp.token_id)},
                     {"logprob", logprob_value(lp.logprob)},
                     {"bytes", token_bytes(tokenizer, lp.token_id)}});
    }
    content.push_back({{"token", token_text(tokenizer, t.chosen.token_id)},
                       {"logprob", logprob_value(t.chosen.logprob)},
                       {"bytes", token_bytes(tokenizer, t.chosen.token_id)},
                       {"top_logprobs", std::move(top)}});
  }
  return {{"content", std::move(content)}};
}

}  // namespace crosspoint
