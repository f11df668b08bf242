#include "tokenizer/chat_template.h"

#include <fmt/format.h>

#include <filesystem>
#include <optional>
#include <string_view>

#include "common/mapped_file.h"

namespace crosspoint {

namespace {

// bos_token / eos_token of tokenizer_config.json: a string or an AddedToken object.
std::string special_token_text(const nlohmann::json& config, const char* key) {
  if (!config.contains(key)) return {};
  const auto& value = config[key];
  if (value.is_string()) return value.get<std::string>();
  if (value.is_object() && value.contains("content") && value["content"].is_string())
    return value["content"].get<std::string>();
  return {};
}

ChatTemplate with_error(std::string origin, std::string error) {
  ChatTemplate chat_template;
  chat_template.origin = std::move(origin);
  chat_template.error = std::move(error);
  return chat_template;
}

}  // namespace

Result<ChatTemplate> chat_template_from_source(const std::string& source, const std::string& bos_token,
                                               const std::string& eos_token) {
  auto compiled = JinjaTemplate::compile(source, bos_token, eos_token);
  if (!compiled.is_ok()) return compiled.status();
  ChatTemplate chat_template;
  chat_template.jinja = std::move(compiled.value());
  chat_template.origin = "source";
  return chat_template;
}

namespace {

// Python's unicode_escape, for the escapes a one-line template on a command line uses.
std::string decode_escapes(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size()) {
      const char c = s[i + 1];
      const char* decoded = c == 'n'    ? "\n"
                            : c == 't'  ? "\t"
                            : c == 'r'  ? "\r"
                            : c == '\\' ? "\\"
                            : c == '"'  ? "\""
                            : c == '\'' ? "'"
                                        : nullptr;
      if (decoded != nullptr) {
        out += decoded;
        ++i;
        continue;
      }
    }
    out += s[i];
  }
  return out;
}

// DIR/tokenizer_config.json as an object: empty when there is none, an error when it is not one.
Result<nlohmann::json> tokenizer_config_of(const std::string& dir) {
  auto text = read_text_file((std::filesystem::path(dir) / "tokenizer_config.json").string());
  if (!text.is_ok()) return nlohmann::json::object();
  nlohmann::json config = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (config.is_discarded() || !config.is_object())
    return invalid_argument("tokenizer_config.json is not a JSON object");
  return config;
}

}  // namespace

Result<ChatTemplate> chat_template_from_spec(const std::string& spec, const std::string& dir) {
  std::string source, origin;
  if (auto file = read_text_file(spec); file.is_ok()) {
    source = std::move(file.value());
    origin = "--chat-template " + spec;
  } else if (spec.find_first_of("{}\n") != std::string::npos) {
    source = decode_escapes(spec);
    origin = "--chat-template (the template given inline)";
  } else {
    return not_found("--chat-template " + spec + ": looks like a file path, but it could not be opened");
  }
  CROSSPOINT_ASSIGN_OR_RETURN(nlohmann::json config, tokenizer_config_of(dir));
  auto chat_template = chat_template_from_source(source, special_token_text(config, "bos_token"),
                                                 special_token_text(config, "eos_token"));
  if (!chat_template.is_ok()) return invalid_argument(origin + ": " + chat_template.status().message());
  chat_template->origin = std::move(origin);
  return chat_template;
}

ChatTemplate chat_template_for_model_dir(const std::string& dir) {
  const std::filesystem::path root(dir);
  auto read_config = tokenizer_config_of(dir);
  if (!read_config.is_ok()) return with_error("tokenizer_config.json", read_config.status().message());
  const nlohmann::json& config = read_config.value();
  const std::string bos = special_token_text(config, "bos_token");
  const std::string eos = special_token_text(config, "eos_token");
  std::string source, origin;
  if (auto jinja_file = read_text_file((root / "chat_template.jinja").string()); jinja_file.is_ok()) {
    source = std::move(jinja_file.value());
    origin = "chat_template.jinja";
  } else if (config.contains("chat_template")) {
    origin = "tokenizer_config.json";
    const auto& value = config["chat_template"];
    if (value.is_string()) {
      source = value.get<std::string>();
    } else if (value.is_array()) {
      for (const auto& entry : value) {
        if (entry.is_object() && entry.contains("name") && entry["name"] == "default" && entry.contains("template") &&
            entry["template"].is_string())
          source = entry["template"].get<std::string>();
      }
      if (source.empty())
        return with_error(origin, "tokenizer_config.json lists named chat templates but none named \"default\"");
    } else if (!value.is_null()) {
      return with_error(origin, "tokenizer_config.json's chat_template is neither a string nor a list");
    }
  }
  if (source.empty()) return ChatTemplate{};  // ChatML
  auto compiled = JinjaTemplate::compile(source, bos, eos);
  if (!compiled.is_ok()) return with_error(origin, origin + ": " + compiled.status().message());
  ChatTemplate chat_template;
  chat_template.jinja = std::move(compiled.value());
  chat_template.origin = std::move(origin);
  return chat_template;
}

namespace {

// The rendered conversation as pieces: the template's text and the messages' contents.
struct ChatPiece {
  bool content = false;
  std::string text;
};

struct RenderedChat {
  std::vector<ChatPiece> pieces;
  // The template changed a content (trim, split), so the contents could not be told apart
  // from the template's text: pieces is the whole rendering as one template piece.
  bool contents_transformed = false;
};

// U+E000 <index> U+E001: stands for message <index>'s content in a marked rendering.
constexpr std::string_view kMarkOpen = "\xEE\x80\x80";
constexpr std::string_view kMarkClose = "\xEE\x80\x81";

nlohmann::json messages_json(const std::vector<ChatMessage>& messages, bool marked) {
  nlohmann::json list = nlohmann::json::array();
  for (size_t i = 0; i < messages.size(); ++i) {
    const std::string content = marked ? fmt::format("{}{}{}", kMarkOpen, i, kMarkClose) : messages[i].content;
    list.push_back({{"role", messages[i].role}, {"content", content}});
  }
  return list;
}

// The marked rendering split at its markers, the contents put in their place; nullopt when a
// marker is malformed or names no message.
std::optional<std::vector<ChatPiece>> unmark(const std::string& marked, const std::vector<ChatMessage>& messages,
                                             std::vector<size_t>* content_message) {
  std::vector<ChatPiece> pieces;
  size_t at = 0;
  while (at <= marked.size()) {
    const size_t open = marked.find(kMarkOpen, at);
    if (open == std::string::npos) {
      pieces.push_back({false, marked.substr(at)});
      break;
    }
    const size_t close = marked.find(kMarkClose, open);
    if (close == std::string::npos) return std::nullopt;
    const std::string index_text = marked.substr(open + kMarkOpen.size(), close - open - kMarkOpen.size());
    if (index_text.empty() || index_text.size() > 6 || index_text.find_first_not_of("0123456789") != std::string::npos)
      return std::nullopt;
    const size_t index = std::stoul(index_text);
    if (index >= messages.size()) return std::nullopt;
    pieces.push_back({false, marked.substr(at, open - at)});
    pieces.push_back({true, messages[index].content});
    content_message->push_back(index);
    at = close + kMarkClose.size();
  }
  return pieces;
}

std::string joined(const std::vector<ChatPiece>& pieces) {
  std::string text;
  for (const ChatPiece& piece : pieces) text += piece.text;
  return text;
}

Result<RenderedChat> render_chatml(const std::vector<ChatMessage>& messages, const ChatRenderOptions& options) {
  RenderedChat rendered;
  for (size_t i = 0; i < messages.size(); ++i) {
    rendered.pieces.push_back({false, "<|im_start|>" + messages[i].role + "\n"});
    rendered.pieces.push_back({true, messages[i].content});
    if (options.continue_final_message && i + 1 == messages.size()) return rendered;
    rendered.pieces.push_back({false, "<|im_end|>\n"});
  }
  if (options.add_generation_prompt) rendered.pieces.push_back({false, "<|im_start|>assistant\n"});
  return rendered;
}

Result<RenderedChat> render_jinja(const JinjaTemplate& jinja, const std::vector<ChatMessage>& messages,
                                  const ChatRenderOptions& options) {
  auto real = jinja.render(messages_json(messages, false), options.add_generation_prompt, options.kwargs);
  if (!real.is_ok()) return real.status();
  bool contents_hold_marks = false;
  for (const ChatMessage& m : messages) contents_hold_marks |= m.content.find(kMarkOpen) != std::string::npos;
  RenderedChat rendered;
  if (!contents_hold_marks) {
    auto marked = jinja.render(messages_json(messages, true), options.add_generation_prompt, options.kwargs);
    std::vector<size_t> content_message;
    if (marked.is_ok()) {
      if (auto pieces = unmark(*marked, messages, &content_message); pieces && joined(*pieces) == *real) {
        rendered.pieces = std::move(*pieces);
        if (options.continue_final_message) {
          // Cut right after the final message's content.
          for (size_t p = rendered.pieces.size(), seen = content_message.size(); p-- > 0;) {
            if (!rendered.pieces[p].content) continue;
            if (content_message[--seen] == messages.size() - 1) {
              rendered.pieces.resize(p + 1);
              return rendered;
            }
          }
          return invalid_argument("continue_final_message: the chat template does not write the final message");
        }
        return rendered;
      }
    }
  }
  rendered.contents_transformed = true;
  std::string text = std::move(real.value());
  if (options.continue_final_message) {
    // As transformers cuts it: at the last occurrence of the stripped final content, keeping
    // its trailing whitespace only where the template kept it.
    constexpr std::string_view kSpace = " \t\n\r\f\v";
    const std::string& last = messages.back().content;
    const size_t first = last.find_first_not_of(kSpace);
    if (first == std::string::npos)
      return invalid_argument("continue_final_message: the final message has no content to continue");
    const std::string lstripped = last.substr(first);
    const std::string stripped = lstripped.substr(0, lstripped.find_last_not_of(kSpace) + 1);
    const size_t at = text.rfind(stripped);
    if (at == std::string::npos)
      return invalid_argument("continue_final_message: the chat template does not write the final message");
    text.resize(at + (text.compare(at, lstripped.size(), lstripped) == 0 ? lstripped.size() : stripped.size()));
  }
  rendered.pieces.push_back({false, std::move(text)});
  return rendered;
}

Result<RenderedChat> render(const ChatTemplate& chat_template, const std::vector<ChatMessage>& messages,
                            const ChatRenderOptions& options) {
  if (!chat_template.error.empty())
    return invalid_argument("this model's chat template is unusable: " + chat_template.error);
  if (messages.empty()) return invalid_argument("messages: a conversation needs at least one message");
  for (size_t i = 0; i < messages.size(); ++i) {
    const std::string& role = messages[i].role;
    if (role != "system" && role != "user" && role != "assistant")
      return invalid_argument(fmt::format("messages[{}].role \"{}\" (expected system, user or assistant)", i, role));
  }
  if (options.continue_final_message && options.add_generation_prompt)
    return invalid_argument("continue_final_message and add_generation_prompt cannot both be true");
  if (!options.kwargs.is_null() && !options.kwargs.is_object())
    return invalid_argument("chat_template_kwargs must be an object");
  if (!chat_template.jinja) return render_chatml(messages, options);
  return render_jinja(*chat_template.jinja, messages, options);
}

}  // namespace

Result<std::string> apply_chat_template(const ChatTemplate& chat_template, const std::vector<ChatMessage>& messages,
                                        const ChatRenderOptions& options) {
  auto rendered = render(chat_template, messages, options);
  if (!rendered.is_ok()) return rendered.status();
  return joined(rendered->pieces);
}

Result<std::vector<int32_t>> encode_chat(const Tokenizer& tokenizer, const ChatTemplate& chat_template,
                                         const std::vector<ChatMessage>& messages, const ChatRenderOptions& options) {
  auto rendered = render(chat_template, messages, options);
  if (!rendered.is_ok()) return rendered.status();
  if (rendered->contents_transformed) {
    // The contents cannot be located in the rendering: encode it whole, which is safe only
    // when no content holds a special token.
    for (size_t i = 0; i < messages.size(); ++i) {
      for (const AddedTokenPiece& piece : tokenizer.split_at_added_tokens(messages[i].content)) {
        if (piece.id >= 0 && tokenizer.is_special(piece.id))
          return invalid_argument(fmt::format(
              "messages[{}].content holds the special token \"{}\", and this model's chat template changes message "
              "contents (trims or splits them), so it cannot be kept apart as text: remove it",
              i, piece.text));
      }
    }
    return tokenizer.encode(rendered->pieces.front().text, /*parse_special=*/true);
  }
  std::vector<int32_t> ids;
  std::string text;  // plain text since the last special token
  auto flush_text = [&] {
    if (text.empty()) return;
    const std::vector<int32_t> part = tokenizer.encode(text, /*parse_special=*/false);
    ids.insert(ids.end(), part.begin(), part.end());
    text.clear();
  };
  for (const ChatPiece& piece : rendered->pieces) {
    if (piece.content) {
      text += piece.text;
      continue;
    }
    for (AddedTokenPiece& part : tokenizer.split_at_added_tokens(piece.text)) {
      if (part.id < 0) {
        text += part.text;
        continue;
      }
      flush_text();
      ids.push_back(part.id);
    }
  }
  flush_text();
  return ids;
}

}  // namespace crosspoint
