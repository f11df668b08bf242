// The tokenizer.json "Metaspace" pre-tokenizer of SentencePiece-style BPE files (Mistral,
// Llama 2 converted with legacy=False): spaces become the replacement ("▁"), which is
// prepended per prepend_scheme, and with split the text is cut before each replacement
// (HF's MergedWithNext), exactly as Hugging Face `tokenizers` does.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "common/status.h"

namespace crosspoint {

enum class PrependScheme { kAlways, kFirst, kNever };

class MetaspacePreTokenizer {
 public:
  // spec: {"type": "Metaspace", "replacement", "prepend_scheme" | "add_prefix_space", "split"}.
  static Result<MetaspacePreTokenizer> from_json(const nlohmann::json& spec, const std::string& where);

  // Appends the words of text, a piece of the input between added tokens; at_start says
  // the piece begins the input (prepend_scheme "first" prepends only there).
  void split(std::string_view text, bool at_start, std::vector<std::string>& words) const;

 private:
  std::string replacement_ = "\xE2\x96\x81";  // U+2581
  PrependScheme prepend_scheme_ = PrependScheme::kAlways;
  bool split_ = true;
};

// "always" / "first" / "never"; anything else is an error naming where.
Result<PrependScheme> parse_prepend_scheme(const nlohmann::json& spec, const std::string& where);

}  // namespace crosspoint
