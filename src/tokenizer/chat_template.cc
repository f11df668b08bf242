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

namespace {

constexpr const char* kImStart = "<|im_start|>";
constexpr const char* kImEnd = "<|im_end|>";

// The rendered conversation as pieces: the template's special tokens (special = true) and the
// text between them (role names, contents, newlines).
struct ChatPiece {
  bool special = false;
  std::string text;
};

Result<std::vector<ChatPiece>> render_pieces(const ChatTemplate& chat_template,
                                             const std::vector<ChatMessage>& messages, bool add_generation_prompt) {
  if (messages.empty()) return invalid_argument("messages: a conversation needs at least one message");
  std::vector<ChatPiece> pieces;
  auto turn = [&](const std::string& role, const std::string& content) {
    pieces.push_back({true, kImStart});
    pieces.push_back({false, role + "\n" + content});
    pieces.push_back({true, kImEnd});
    pieces.push_back({false, "\n"});
  };
  for (size_t i = 0; i < messages.size(); ++i) {
    const ChatMessage& message = messages[i];
    if (message.role != "system" && message.role != "user" && message.role != "assistant")
      return invalid_argument(
          fmt::format("messages[{}].role \"{}\" (expected system, user or assistant)", i, message.role));
    if (i == 0 && message.role != "system" && !chat_template.default_system_prompt.empty())
      turn("system", chat_template.default_system_prompt);
    turn(message.role, message.content);
  }
  if (add_generation_prompt) {
    pieces.push_back({true, kImStart});
    pieces.push_back({false, "assistant\n"});
  }
  return pieces;
}

}  // namespace

Result<std::string> apply_chat_template(const ChatTemplate& chat_template, const std::vector<ChatMessage>& messages,
                                        bool add_generation_prompt) {
  auto pieces = render_pieces(chat_template, messages, add_generation_prompt);
  if (!pieces.is_ok()) return pieces.status();
  std::string prompt;
  for (const ChatPiece& piece : pieces.value()) prompt += piece.text;
  return prompt;
}

Result<std::vector<int32_t>> encode_chat(const Tokenizer& tokenizer, const ChatTemplate& chat_template,
                                         const std::vector<ChatMessage>& messages, bool add_generation_prompt) {
  auto pieces = render_pieces(chat_template, messages, add_generation_prompt);
  if (!pieces.is_ok()) return pieces.status();
  std::vector<int32_t> ids;
  std::string text;  // text since the last special token
  auto flush_text = [&] {
    if (text.empty()) return;
    const std::vector<int32_t> part = tokenizer.encode(text, /*parse_special=*/false);
    ids.insert(ids.end(), part.begin(), part.end());
    text.clear();
  };
  for (const ChatPiece& piece : pieces.value()) {
    if (!piece.special) {
      text += piece.text;
      continue;
    }
    flush_text();
    const std::vector<int32_t> part = tokenizer.encode(piece.text, /*parse_special=*/true);
    ids.insert(ids.end(), part.begin(), part.end());
  }
  flush_text();
  return ids;
}

}  // namespace crosspoint
