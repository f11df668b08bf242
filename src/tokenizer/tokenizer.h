// BPE tokenizer, loaded from a Hugging Face tokenizer.json or from GGUF metadata: byte-level
// (GPT-2 byte mapping, ranked merges, a pre-tokenizer regex run by PCRE2 with Unicode
// properties) or SentencePiece-style with byte fallback (Llama 2, Mistral; tokenizer.json
// only). Encodes to exactly the ids Hugging Face `tokenizers` produces.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace crosspoint {

class GgufFile;

// A piece of a text cut at its added tokens: an added token (id >= 0, text what it matched) or
// the text between two (id -1).
struct AddedTokenPiece {
  int32_t id = -1;
  std::string text;
};

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // DIR/tokenizer.json plus DIR/tokenizer_config.json when present (special tokens,
  // chat template family, bos/eos).
  static Result<std::unique_ptr<Tokenizer>> from_model_dir(const std::string& dir);
  static Result<std::unique_ptr<Tokenizer>> from_tokenizer_json(const std::string& path);
  static Result<std::unique_ptr<Tokenizer>> from_gguf(const GgufFile& gguf);

  // Special tokens (e.g. "<|im_start|>") in the text are matched as such when
  // parse_special is true, as HF does for added tokens.
  virtual std::vector<int32_t> encode(std::string_view text, bool parse_special = true) const = 0;
  // The text cut as encode(text, true) cuts it before normalisation and BPE.
  virtual std::vector<AddedTokenPiece> split_at_added_tokens(std::string_view text) const = 0;
  // The text of the tokens as HF's decoder makes it (byte-level: the concatenated bytes;
  // byte fallback: the file's decoder chain); invalid UTF-8 is replaced by U+FFFD as HF
  // does. skip_special drops special tokens.
  virtual std::string decode(std::span<const int32_t> ids, bool skip_special = false) const = 0;
  // The raw bytes one token stands for (may be part of a UTF-8 sequence).
  virtual std::string token_bytes(int32_t id) const = 0;
  virtual std::optional<int32_t> token_id(std::string_view token) const = 0;
  virtual bool is_special(int32_t id) const = 0;
  // Number of ids (regular + special): every valid id is below it.
  virtual int32_t vocab_size() const = 0;

  virtual std::optional<int32_t> bos_token_id() const = 0;
  // Special tokens HF's tokenizer(text) adds around one sequence (its post-processor: a
  // TemplateProcessing single template's special tokens, e.g. Llama 3's <|begin_of_text|>);
  // encode() never adds them. What vLLM's benchmarks count on top of the text's tokens.
  virtual int32_t num_added_special_tokens() const { return 0; }
  // ids as HF's tokenizer(text, add_special_tokens=True) returns them: with the special tokens
  // its post-processor puts around one sequence (what vLLM's completions do by default).
  virtual std::vector<int32_t> with_special_tokens(std::vector<int32_t> ids) const { return ids; }
  // Ids that end generation (e.g. <|im_end|> and <|endoftext|>).
  virtual std::vector<int32_t> eos_token_ids() const = 0;

  // SentencePiece-style (byte-fallback) decoders are not a concatenation of token_bytes: a
  // stream decodes them in pieces, each a run of ids ending at one for which ends_piece is
  // true (a run of <0xNN> tokens stays open), decode_piece giving exactly the text decode
  // gives for them in that place (first: the piece starts the stream).
  virtual bool decodes_in_pieces() const { return false; }
  virtual bool ends_piece(int32_t /*id*/) const { return true; }
  virtual std::string decode_piece(std::span<const int32_t> ids, bool /*first*/) const { return decode(ids); }
};

// Streams text as ids arrive without ever emitting a broken UTF-8 sequence: bytes of an
// incomplete character are held back until the character completes.
class IncrementalDecoder {
 public:
  explicit IncrementalDecoder(const Tokenizer& tokenizer, bool skip_special = true);
  // Text that became complete with this token (possibly empty).
  std::string push(int32_t id);
  // Whatever is held back at the end, with invalid bytes replaced by U+FFFD.
  std::string flush();

 private:
  const Tokenizer& tokenizer_;
  bool skip_special_;
  std::string pending_;
  // decodes_in_pieces tokenizers: the open piece's ids, and whether none was decoded yet.
  std::vector<int32_t> piece_;
  bool first_piece_ = true;
};

}  // namespace crosspoint
