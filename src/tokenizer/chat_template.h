// The chat template: the model's own Jinja template (tokenizer_config.json's chat_template, a
// string or a list of named templates, or chat_template.jinja beside it) rendered by minja as
// transformers' apply_chat_template renders it; ChatML when the model has none.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "tokenizer/jinja_template.h"
#include "tokenizer/tokenizer.h"

namespace crosspoint {

struct ChatMessage {
  std::string role;  // "system", "user", "assistant"
  std::string content;
};

struct ChatTemplate {
  // The model's template; null: ChatML (<|im_start|>role\ncontent<|im_end|>\n per message).
  std::shared_ptr<const JinjaTemplate> jinja;
  // Where the template came from ("tokenizer_config.json", "chat_template.jinja"), for the log.
  std::string origin;
  // Set when the model's template could not be read or parsed: every chat request is refused
  // with it (completions still work).
  std::string error;
};

// The template of a model directory: chat_template.jinja when present (newer transformers
// write it there), else tokenizer_config.json's chat_template: a string, or a list of
// {"name", "template"} entries of which "default" is taken. bos_token and eos_token come from
// tokenizer_config.json (a string or an {"content": ...} object).
ChatTemplate chat_template_for_model_dir(const std::string& dir);

// vLLM's --chat-template SPEC in place of the model's: the file SPEC names, or, when no such file
// opens and SPEC holds '{', '}' or a newline, SPEC itself as the template (its \n, \t, \\, \"
// and \' escapes decoded). bos_token and eos_token still come from dir's tokenizer_config.json.
// A SPEC that looks like a path but does not open, or a template that does not compile, is an
// error naming it.
Result<ChatTemplate> chat_template_from_spec(const std::string& spec, const std::string& dir);

// A template from its Jinja source (tests, the toy server).
Result<ChatTemplate> chat_template_from_source(const std::string& source, const std::string& bos_token = "",
                                               const std::string& eos_token = "");

// Options of one rendering, as the OpenAI/vLLM chat request names them.
struct ChatRenderOptions {
  bool add_generation_prompt = true;
  // The rendering stops right after the last message's content, so the model continues that
  // message (vLLM's continue_final_message); needs add_generation_prompt false.
  bool continue_final_message = false;
  // Further template variables (chat_template_kwargs, e.g. Qwen3's enable_thinking): an object
  // or null.
  nlohmann::json kwargs = nullptr;
};

// The rendered conversation.
Result<std::string> apply_chat_template(const ChatTemplate& chat_template, const std::vector<ChatMessage>& messages,
                                        const ChatRenderOptions& options = {});

// The token ids of the rendered conversation, with the message contents as plain text: the
// special tokens the template writes are special tokens, while the same strings inside a
// message's content are tokenised as text, so no content can forge a turn (HF's
// split_special_tokens behaviour for the content). The text between the template's special
// tokens is encoded as one piece, as a tokenizer encoding the rendered string splits it, so a
// conversation whose contents hold no special-token strings gets the ids of
// tokenizer.encode(apply_chat_template(...)), i.e. transformers' apply_chat_template with
// tokenize=True. When the template changes a content (trims it, splits it) and that content
// holds a special-token string, the request is refused rather than let through.
Result<std::vector<int32_t>> encode_chat(const Tokenizer& tokenizer, const ChatTemplate& chat_template,
                                         const std::vector<ChatMessage>& messages,
                                         const ChatRenderOptions& options = {});

}  // namespace crosspoint
