// The tokenizer.json "decoder" of SentencePiece-style (byte-fallback) BPE files, run on the
// tokens' texts as Hugging Face `tokenizers` runs it: a Sequence of
//   Replace {pattern: {String}, content}   in each token
//   ByteFallback                           runs of <0xNN> tokens become their bytes when
//                                          those are valid UTF-8, else one U+FFFD per token
//   Fuse                                   all tokens become one
//   Strip {content, start, stop}           up to start / stop copies of content off each
//                                          token's ends
//   Metaspace {replacement, prepend_scheme} replacement -> " " in each token; in the first
//                                          token it is removed (unless prepend_scheme never)
// or one of them alone.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "common/status.h"

namespace crosspoint {

// The byte a "<0xNN>" token stands for (as HF's ByteFallback reads it), else nullopt.
std::optional<uint8_t> fallback_byte(const std::string& token);

class PieceDecoder {
 public:
  static Result<PieceDecoder> from_json(const nlohmann::json& spec, const std::string& where);

  // The text of tokens. A stream decodes in pieces, each a run of <0xNN> tokens and the token
  // ending it: first says this piece starts the stream. Decoding a whole sequence as one
  // piece with first = true is HF's decode; pieces concatenate to the same text.
  std::string decode(std::vector<std::string> tokens, bool first = true) const;

  bool has_byte_fallback() const;

 private:
  struct Step {
    enum class Kind { kReplace, kByteFallback, kFuse, kStrip, kMetaspace };
    Kind kind = Kind::kFuse;
    std::string pattern, content;  // kReplace; kStrip: content; kMetaspace: pattern = replacement
    int start = 0, stop = 0;       // kStrip
    bool strip_first = true;       // kMetaspace: prepend_scheme is not "never"
  };
  static Status add_step(const nlohmann::json& spec, const std::string& where, PieceDecoder& decoder);
  std::vector<Step> steps_;
};

}  // namespace crosspoint
