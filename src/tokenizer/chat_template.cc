#include "tokenizer/chat_template.h"

#include <fmt/format.h>

#include <filesystem>
#include <regex>

#include <nlohmann/json.hpp>

#include "common/mapped_file.h"

namespace crosspoint {

namespace {

// Undoes the escapes a Jinja string literal may hold ("\n", "\'", "\\", ...).
std::string unescape_jinja_literal(const std::string& literal) {
  std::string out;
  for (size_t i = 0; i < literal.size(); ++i) {
    if (literal[i] != '\\' || i + 1 == literal.size()) {
      out.push_back(literal[i]);
      continue;
    }
    const char next = literal[++i];
    switch (next) {
      case 'n': out.push_back('\n'); break;
      case 't': out.push_back('\t'); break;
      case 'r': out.push_back('\r'); break;
      default: out.push_back(next); break;  // \' \" \\ and anything else: the character
    }
  }
  return out;
}

}  // namespace

std::string default_system_prompt_from_template(const std::string& jinja_template) {
  // Both families write the default as one literal:
  //   '<|im_start|>system\nYou are Qwen, ...<|im_end|>\n'
  // where "\n" is either the two-character escape (Qwen) or a raw newline inside the
  // string literal (SmolLM2's GGUF template).
  static const std::regex kDefaultSystem(R"(<\|im_start\|>system(?:\\n|\n)((?:[^'"\\]|\\.)*?)<\|im_end\|>)");
  std::smatch match;
  if (!std::regex_search(jinja_template, match, kDefaultSystem)) return {};
  return unescape_jinja_literal(match[1].str());
}

ChatTemplate chat_template_for_model_dir(const std::string& dir) {
  ChatTemplate chat_template;
  const auto path = std::filesystem::path(dir) / "tokenizer_config.json";
  auto text = read_text_file(path.string());
  if (!text.is_ok()) return chat_template;
  const nlohmann::json config = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (config.is_discarded() || !config.is_object() || !config.contains("chat_template")) return chat_template;
  try {
    const auto& value = config["chat_template"];
    if (value.is_string()) {
      chat_template.default_system_prompt = default_system_prompt_from_template(value.get<std::string>());
    } else if (value.is_array()) {
      // Some files list named templates: [{"name": "default", "template": "..."}, ...].
      for (const auto& entry : value) {
        if (entry.is_object() && entry.value("name", "") == "default" && entry.contains("template") &&
            entry["template"].is_string())
          chat_template.default_system_prompt =
              default_system_prompt_from_template(entry["template"].get<std::string>());
      }
    }
  } catch (const nlohmann::json::exception&) {
    // A chat_template of an unexpected shape: no default system prompt.
  }
  return chat_template;
}

Result<std::string> apply_chat_template(const ChatTemplate& chat_template, const std::vector<ChatMessage>& messages,
                                        bool add_generation_prompt) {
  if (messages.empty()) return invalid_argument("messages: a conversation needs at least one message");
  std::string prompt;
  for (size_t i = 0; i < messages.size(); ++i) {
    const ChatMessage& message = messages[i];
    if (message.role != "system" && message.role != "user" && message.role != "assistant")
      return invalid_argument(
          fmt::format("messages[{}].role \"{}\" (expected system, user or assistant)", i, message.role));
    if (i == 0 && message.role != "system" && !chat_template.default_system_prompt.empty())
      prompt += "<|im_start|>system\n" + chat_template.default_system_prompt + "<|im_end|>\n";
    prompt += "<|im_start|>" + message.role + "\n" + message.content + "<|im_end|>\n";
  }
  if (add_generation_prompt) prompt += "<|im_start|>assistant\n";
  return prompt;
}

}  // namespace crosspoint
