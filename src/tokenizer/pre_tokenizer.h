// The tokenizer.json "pre_tokenizer": splits normalised text into words before BPE.
// Supported as they occur in byte-level BPE files (Qwen2.5, SmolLM2, Llama 3, GPT-2):
//   Split {pattern: {Regex|String}, behavior, invert}   (regex run by UnicodeRegex)
//   Digits {individual_digits}
//   ByteLevel {add_prefix_space, use_regex}             (use_regex: the GPT-2 pattern)
//   Sequence {pretokenizers: [...]}
// The byte-level character mapping itself is left to the BPE model, which works on raw
// bytes, so words come out as raw UTF-8 bytes.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "common/status.h"
#include "tokenizer/unicode_regex.h"

namespace crosspoint {

// The pattern GPT-2's ByteLevel pre-tokenizer uses when use_regex is true.
extern const char* const kGpt2SplitPattern;

// How a Split step treats the matches (names as in Hugging Face `tokenizers`).
enum class SplitBehavior { kIsolated, kRemoved, kMergedWithPrevious, kMergedWithNext, kContiguous };

struct PreTokenizerStep {
  enum class Kind { kSplit, kAddPrefixSpace };
  Kind kind = Kind::kSplit;
  UnicodeRegex regex;  // kSplit only
  SplitBehavior behavior = SplitBehavior::kIsolated;
  bool invert = false;
};

class PreTokenizer {
 public:
  // spec is the "pre_tokenizer" value; has_byte_level is set when a ByteLevel step is
  // present (the BPE model requires one).
  static Result<PreTokenizer> from_json(const nlohmann::json& spec, const std::string& where, bool* has_byte_level);

  // Appends the words of text (valid UTF-8) to words.
  void split(std::string_view text, std::vector<std::string>& words) const;

 private:
  Status add_step(const nlohmann::json& spec, const std::string& where, bool* has_byte_level);
  std::vector<PreTokenizerStep> steps_;
};

}  // namespace crosspoint
