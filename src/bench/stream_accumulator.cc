#include "bench/stream_accumulator.h"

#include <nlohmann/json.hpp>

namespace crosspoint::bench {

namespace {

std::string clip(const std::string& text, size_t max_bytes = 200) {
  return text.size() <= max_bytes ? text : text.substr(0, max_bytes) + "...";
}

// Text of a completions choice ("text") or a chat choice ("delta.content", also
// "delta.reasoning_content" from reasoning models).
std::string choice_text(const nlohmann::json& choice) {
  std::string text;
  if (!choice.is_object()) return text;
  auto it = choice.find("text");
  if (it != choice.end() && it->is_string()) text += it->get<std::string>();
  auto delta = choice.find("delta");
  if (delta != choice.end() && delta->is_object()) {
    for (const char* key : {"reasoning_content", "reasoning", "content"}) {
      auto field = delta->find(key);
      if (field != delta->end() && field->is_string()) text += field->get<std::string>();
    }
  }
  return text;
}

}  // namespace

Status StreamAccumulator::on_payload(const std::string& payload, double time_s) {
  if (payload == "[DONE]") {
    saw_done_ = true;
    return Status::ok();
  }
  nlohmann::json message = nlohmann::json::parse(payload, nullptr, /*allow_exceptions=*/false);
  if (message.is_discarded() || !message.is_object()) {
    return corrupt("malformed stream chunk (not a JSON object): " + clip(payload));
  }
  auto error = message.find("error");
  if (error != message.end() && !error->is_null()) {
    std::string text = error->is_object() && error->contains("message") && (*error)["message"].is_string()
                           ? (*error)["message"].get<std::string>()
                           : error->dump();
    return internal_error("server error in stream: " + clip(text));
  }
  auto choices = message.find("choices");
  if (choices != message.end() && choices->is_array() && !choices->empty()) {
    if (num_token_events_ == 0) {
      record_.ttft_s = time_s - record_.start_s;
    } else {
      record_.itl_s.push_back(time_s - last_event_s_);
    }
    last_event_s_ = time_s;
    record_.latency_s = time_s - record_.start_s;
    ++num_token_events_;
    record_.generated_text += choice_text((*choices)[0]);
  }
  auto usage = message.find("usage");
  if (usage != message.end() && usage->is_object()) {
    auto completion = usage->find("completion_tokens");
    if (completion != usage->end() && completion->is_number_integer()) {
      record_.usage_completion_tokens = completion->get<int>();
    }
    auto prompt = usage->find("prompt_tokens");
    if (prompt != usage->end() && prompt->is_number_integer() && prompt->get<int>() > 0) {
      record_.prompt_len = prompt->get<int>();
    }
  }
  return Status::ok();
}

}  // namespace crosspoint::bench
