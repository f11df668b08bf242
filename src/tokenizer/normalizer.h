// The tokenizer.json "normalizer": Unicode normalisation (Qwen2.5: NFC, done by ICU) and the
// SentencePiece-style steps of Llama 2 / Mistral v0.1 files (Prepend("▁"), Replace(" ", "▁")
// with a literal pattern), alone or in a Sequence. Anything else is reported as unsupported
// when the file is read.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "common/status.h"

namespace crosspoint {

enum class NormalizationForm { kNfc, kNfd, kNfkc, kNfkd };

class Normalizer {
 public:
  // null (no normalisation), {"type": "NFC"|"NFD"|"NFKC"|"NFKD"}, {"type": "Prepend",
  // "prepend": s}, {"type": "Replace", "pattern": {"String": s}, "content": t} or a
  // "Sequence" of them.
  static Result<Normalizer> from_json(const nlohmann::json& spec, const std::string& where);

  bool is_identity() const { return steps_.empty(); }
  // text must be valid UTF-8.
  std::string apply(std::string_view text) const;

 private:
  struct Step {
    enum class Kind { kForm, kPrepend, kReplace };
    Kind kind = Kind::kForm;
    NormalizationForm form = NormalizationForm::kNfc;  // kForm
    std::string text;                                  // kPrepend: the prefix; kReplace: the literal pattern
    std::string content;                               // kReplace: what replaces it
  };
  static Result<Step> parse_step(const nlohmann::json& spec, const std::string& where);
  std::vector<Step> steps_;  // applied in order
};

}  // namespace crosspoint
