#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace crosspoint {

IncrementalDecoder::IncrementalDecoder(const Tokenizer& tokenizer, bool skip_special)
    : tokenizer_(tokenizer), skip_special_(skip_special) {}

std::string IncrementalDecoder::push(int32_t id) {
  if (skip_special_ && tokenizer_.is_special(id)) return {};
  if (tokenizer_.decodes_in_pieces()) {
    piece_.push_back(id);
    if (!tokenizer_.ends_piece(id)) return {};
    std::string out = tokenizer_.decode_piece(piece_, first_piece_);
    piece_.clear();
    first_piece_ = false;
    return out;
  }
  pending_ += tokenizer_.token_bytes(id);
  // Everything up to an unfinished trailing character can go out now; invalid bytes
  // inside it are final, so they are replaced exactly as decode() would.
  const size_t complete = utf8_complete_prefix_length(pending_);
  std::string out = replace_invalid_utf8(std::string_view(pending_).substr(0, complete));
  pending_.erase(0, complete);
  return out;
}

std::string IncrementalDecoder::flush() {
  if (!piece_.empty()) {
    std::string out = tokenizer_.decode_piece(piece_, first_piece_);
    piece_.clear();
    first_piece_ = false;
    return out;
  }
  std::string out = replace_invalid_utf8(pending_);
  pending_.clear();
  return out;
}

}  // namespace crosspoint
