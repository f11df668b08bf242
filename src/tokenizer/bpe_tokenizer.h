// The Tokenizer implementation: added tokens -> normaliser -> pre-tokenizer -> BPE, built from
// a parsed tokenizer.json (and optionally tokenizer_config.json). Byte-level BPE (GPT-2,
// Qwen2.5, SmolLM2, Llama 3) or SentencePiece-style BPE with byte fallback (Llama 2, Mistral,
// TinyLlama: Metaspace or Prepend/Replace, <0xNN> tokens, a ByteFallback decoder chain).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <nlohmann/json.hpp>

#include "tokenizer/added_vocabulary.h"
#include "tokenizer/bpe_model.h"
#include "tokenizer/metaspace.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/piece_decoder.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/tokenizer.h"

namespace crosspoint {

class BpeTokenizer final : public Tokenizer {
 public:
  // tokenizer_json: a parsed tokenizer.json; config: a parsed tokenizer_config.json or
  // null (bos_token / eos_token). where names the file in errors.
  static Result<std::unique_ptr<BpeTokenizer>> create(const nlohmann::json& tokenizer_json,
                                                      const nlohmann::json& config, const std::string& where);

  std::vector<int32_t> encode(std::string_view text, bool parse_special = true) const override;
  std::vector<AddedTokenPiece> split_at_added_tokens(std::string_view text) const override;
  std::string decode(std::span<const int32_t> ids, bool skip_special = false) const override;
  std::string token_bytes(int32_t id) const override;
  std::optional<int32_t> token_id(std::string_view token) const override;
  bool is_special(int32_t id) const override;
  int32_t vocab_size() const override { return static_cast<int32_t>(token_bytes_.size()); }
  std::optional<int32_t> bos_token_id() const override { return bos_token_id_; }
  std::vector<int32_t> eos_token_ids() const override { return eos_token_ids_; }
  int32_t num_added_special_tokens() const override {
    return static_cast<int32_t>(special_prefix_.size() + special_suffix_.size());
  }
  std::vector<int32_t> with_special_tokens(std::vector<int32_t> ids) const override;
  bool decodes_in_pieces() const override { return piece_decoder_.has_value(); }
  bool ends_piece(int32_t id) const override;
  std::string decode_piece(std::span<const int32_t> ids, bool first) const override;

 private:
  BpeTokenizer() = default;
  Status load_added_tokens(const nlohmann::json& tokenizer_json, const std::string& where);
  // The SentencePiece-style parts: a Metaspace pre-tokenizer (or none), the decoder chain.
  Status load_piece_parts(const nlohmann::json& tokenizer_json, const std::string& where);
  void resolve_bos_eos(const nlohmann::json& config);

  Normalizer normalizer_;
  PreTokenizer pre_tokenizer_;
  // SentencePiece-style (byte-fallback) files only: the Metaspace pre-tokenizer (none when
  // pre_tokenizer is null), the decoder and each id's text as in the vocabulary.
  std::optional<MetaspacePreTokenizer> metaspace_;
  std::optional<PieceDecoder> piece_decoder_;
  std::vector<std::string> token_text_;
  std::optional<BpeModel> model_;
  AddedVocabulary added_vocabulary_;
  std::unordered_map<std::string, int32_t> id_by_token_;  // token text as in the file -> id
  std::vector<std::string> token_bytes_;                  // [vocab_size] raw bytes per id
  std::unordered_set<int32_t> special_ids_;
  std::optional<int32_t> bos_token_id_;
  std::vector<int32_t> eos_token_ids_;
  // The post-processor's special tokens before and after one sequence.
  std::vector<int32_t> special_prefix_, special_suffix_;
};

}  // namespace crosspoint
