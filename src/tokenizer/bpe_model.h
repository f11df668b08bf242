// Byte-level BPE: a word (raw bytes) starts as one symbol per byte and the adjacent pair
// with the lowest merge rank is merged until no ranked pair is left (leftmost first on
// ties), exactly as Hugging Face `tokenizers` BPE does. Results are cached per word.
// SentencePiece-style files (byte_fallback) instead start from one symbol per character,
// spelt as in the vocabulary; a character the vocabulary lacks becomes its UTF-8 bytes as
// <0xNN> tokens when all of them exist (byte_fallback), else the unk token.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/status.h"

namespace crosspoint {

class BpeModel {
 public:
  // vocab: token text in byte-level form ("Ġworld") -> id. merges: pairs of token texts,
  // earliest = highest priority. ignore_merges: a word that is itself in the vocabulary
  // becomes that token without merging (Llama 3 style files set it).
  static Result<BpeModel> create(const std::unordered_map<std::string, int32_t>& vocab,
                                 const std::vector<std::pair<std::string, std::string>>& merges, bool ignore_merges,
                                 const std::string& where);

  // Vocabulary texts are the characters themselves (not byte-level); byte_fallback: unknown
  // characters become <0xNN> tokens; unk_id (< 0: none) stands for what is left, runs of
  // them fused into one when fuse_unk.
  static Result<BpeModel> create_char_level(const std::unordered_map<std::string, int32_t>& vocab,
                                            const std::vector<std::pair<std::string, std::string>>& merges,
                                            bool ignore_merges, bool byte_fallback, int32_t unk_id, bool fuse_unk,
                                            const std::string& where);

  // Appends the ids of one word.
  void encode_word(std::string_view word, std::vector<int32_t>& ids) const;

  size_t num_merges() const { return merges_.size(); }

 private:
  struct Merge {
    int32_t rank;
    int32_t merged_id;
  };
  struct WordCache {
    std::shared_mutex mutex;
    std::unordered_map<std::string, std::vector<int32_t>> ids_by_word;
  };
  static uint64_t pair_key(int32_t left, int32_t right) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
  }
  void merge_word(std::string_view word, std::vector<int32_t>& ids) const;
  Status add_merges(const std::unordered_map<std::string, int32_t>& vocab,
                    const std::vector<std::pair<std::string, std::string>>& merges, const std::string& where);
  // The first symbols of a char-level word.
  void char_symbols(std::string_view word, std::vector<int32_t>& ids) const;

  std::array<int32_t, 256> byte_to_id_{};                 // -1 when a byte has no token
  std::unordered_map<uint64_t, Merge> merges_;            // (left id, right id) -> merge
  std::unordered_map<std::string, int32_t> id_by_bytes_;  // raw bytes -> id (ignore_merges only)
  bool ignore_merges_ = false;
  // Char-level (SentencePiece-style) models only:
  bool char_level_ = false;
  std::unordered_map<std::string, int32_t> id_by_text_;  // vocabulary text -> id
  std::array<int32_t, 256> fallback_byte_id_{};          // <0xNN> ids, -1 when absent or not byte_fallback
  int32_t unk_id_ = -1;
  bool fuse_unk_ = false;
  std::unique_ptr<WordCache> cache_ = std::make_unique<WordCache>();
};

}  // namespace crosspoint
