// The ChatML chat template Qwen2.5 and SmolLM2 both use:
//   <|im_start|>system\n{content}<|im_end|>\n<|im_start|>user\n...<|im_end|>\n<|im_start|>assistant\n
// with the model family's default system prompt when the conversation has none.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "tokenizer/tokenizer.h"

namespace crosspoint {

struct ChatMessage {
  std::string role;  // "system", "user", "assistant"
  std::string content;
};

struct ChatTemplate {
  // Inserted as the system message when the first message is not a system message.
  std::string default_system_prompt;
};

// The template for a model directory: the default system prompt is read off the
// chat_template in tokenizer_config.json (Qwen2.5: "You are Qwen, created by Alibaba Cloud.
// You are a helpful assistant."; SmolLM2: its own); none when the template has none.
ChatTemplate chat_template_for_model_dir(const std::string& dir);

// The default system prompt written as a literal in a ChatML Jinja template (the text of
// '<|im_start|>system\n...<|im_end|>'), or "" when there is none.
std::string default_system_prompt_from_template(const std::string& jinja_template);

// Renders the conversation; add_generation_prompt appends "<|im_start|>assistant\n".
Result<std::string> apply_chat_template(const ChatTemplate& chat_template, const std::vector<ChatMessage>& messages,
                                        bool add_generation_prompt = true);

// The token ids of the rendered conversation, with the message contents as plain text: the
// template's own <|im_start|> and <|im_end|> are special tokens, while the same strings
// inside a message's content are tokenised as text, so no content can forge a turn (HF's
// split_special_tokens behaviour for the content). The text between the template's special
// tokens is encoded as one piece, as a tokenizer encoding the rendered string splits it, so a
// conversation whose contents hold no special-token strings gets the ids of
// tokenizer.encode(apply_chat_template(...)).
Result<std::vector<int32_t>> encode_chat(const Tokenizer& tokenizer, const ChatTemplate& chat_template,
                                         const std::vector<ChatMessage>& messages, bool add_generation_prompt = true);

}  // namespace crosspoint
