// Unicode normalisation as a tokenizer.json "normalizer" asks for (Qwen2.5: NFC), done by
// ICU. Only the normalisation forms occur in the byte-level models we load; anything
// else is reported as unsupported when the file is read.
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
  // null (no normalisation), {"type": "NFC"|"NFD"|"NFKC"|"NFKD"} or a "Sequence" of them.
  static Result<Normalizer> from_json(const nlohmann::json& spec, const std::string& where);

  bool is_identity() const { return forms_.empty(); }
  // text must be valid UTF-8.
  std::string apply(std::string_view text) const;

 private:
  std::vector<NormalizationForm> forms_;  // applied in order
};

}  // namespace crosspoint
