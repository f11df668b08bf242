// UTF-8 decoding with the replacement rule Hugging Face `tokenizers` (Rust
// String::from_utf8_lossy) and Python's bytes.decode("utf-8", "replace") share: every
// maximal invalid subsequence becomes one U+FFFD.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace crosspoint {

enum class Utf8Status {
  kValid,       // a whole, well-formed character
  kInvalid,     // ill-formed: length is the maximal subpart to replace by one U+FFFD
  kIncomplete,  // a well-formed prefix cut off by the end of the text
};

struct Utf8Char {
  Utf8Status status = Utf8Status::kValid;
  uint32_t codepoint = 0;  // only for kValid
  size_t length = 0;       // bytes consumed (>= 1)
};

// The character starting at text[pos] (pos < text.size()).
Utf8Char decode_utf8_char(std::string_view text, size_t pos);

bool is_valid_utf8(std::string_view text);

// text with each maximal invalid subsequence (including a truncated last character)
// replaced by U+FFFD ("\xEF\xBF\xBD").
std::string replace_invalid_utf8(std::string_view text);

// Length of the longest prefix that does not end inside an incomplete (but so far
// well-formed) character: the part of a stream that can be shown now.
size_t utf8_complete_prefix_length(std::string_view text);

void append_utf8(uint32_t codepoint, std::string& out);

}  // namespace crosspoint
