// A model's own Jinja chat template (tokenizer_config.json's chat_template), rendered by minja
// with the environment transformers' apply_chat_template gives it: messages,
// add_generation_prompt, bos_token, eos_token, raise_exception, strftime_now, trim_blocks and
// lstrip_blocks, plus the caller's extra variables (chat_template_kwargs).
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace crosspoint {

class JinjaTemplate {
 public:
  ~JinjaTemplate();
  // Parses the template once; a syntax error is an invalid_argument naming what minja saw.
  static Result<std::shared_ptr<const JinjaTemplate>> compile(const std::string& source, const std::string& bos_token,
                                                              const std::string& eos_token);

  // messages: an array of {"role", "content"} objects. extra: an object of further variables
  // (null for none); messages, add_generation_prompt, bos_token and eos_token win over them.
  // An exception the template raises (raise_exception, a type error) is an invalid_argument
  // with its message.
  Result<std::string> render(const nlohmann::json& messages, bool add_generation_prompt,
                             const nlohmann::json& extra = nullptr) const;

 private:
  struct Parsed;
  JinjaTemplate(std::string bos_token, std::string eos_token, std::unique_ptr<Parsed> parsed);

  std::string bos_token_;
  std::string eos_token_;
  std::unique_ptr<Parsed> parsed_;
};

}  // namespace crosspoint
