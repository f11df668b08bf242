#include "tokenizer/utf8.h"

namespace crosspoint {

namespace {
constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD
}

Utf8Char decode_utf8_char(std::string_view text, size_t pos) {
  const auto byte_at = [&](size_t i) { return static_cast<uint8_t>(text[i]); };
  const uint8_t lead = byte_at(pos);
  if (lead < 0x80) return {Utf8Status::kValid, lead, 1};
  // Number of continuation bytes and the allowed range of the first one (Unicode Table 3-7).
  size_t num_continuation = 0;
  uint8_t lower = 0x80, upper = 0xBF;
  uint32_t codepoint = 0;
  if (lead >= 0xC2 && lead <= 0xDF) {
    num_continuation = 1;
    codepoint = lead & 0x1F;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    num_continuation = 2;
    codepoint = lead & 0x0F;
    if (lead == 0xE0) lower = 0xA0;
    if (lead == 0xED) upper = 0x9F;  // no surrogates
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    num_continuation = 3;
    codepoint = lead & 0x07;
    if (lead == 0xF0) lower = 0x90;
    if (lead == 0xF4) upper = 0x8F;  // nothing above U+10FFFF
  } else {
    return {Utf8Status::kInvalid, 0, 1};
  }
  for (size_t k = 1; k <= num_continuation; ++k) {
    if (pos + k >= text.size()) return {Utf8Status::kIncomplete, 0, k};
    const uint8_t b = byte_at(pos + k);
    if (b < lower || b > upper) return {Utf8Status::kInvalid, 0, k};
    codepoint = (codepoint << 6) | (b & 0x3F);
    lower = 0x80;
    upper = 0xBF;
  }
  return {Utf8Status::kValid, codepoint, num_continuation + 1};
}

bool is_valid_utf8(std::string_view text) {
  for (size_t pos = 0; pos < text.size();) {
    if (static_cast<uint8_t>(text[pos]) < 0x80) {
      ++pos;
      continue;
    }
    const Utf8Char c = decode_utf8_char(text, pos);
    if (c.status != Utf8Status::kValid) return false;
    pos += c.length;
  }
  return true;
}

std::string replace_invalid_utf8(std::string_view text) {
  if (is_valid_utf8(text)) return std::string(text);
  std::string out;
  out.reserve(text.size() + 8);
  for (size_t pos = 0; pos < text.size();) {
    const Utf8Char c = decode_utf8_char(text, pos);
    if (c.status == Utf8Status::kValid) {
      out.append(text.substr(pos, c.length));
    } else {
      out.append(kReplacement);
    }
    pos += c.length;
  }
  return out;
}

size_t utf8_complete_prefix_length(std::string_view text) {
  // Only the last (at most 3) bytes can start an incomplete character.
  const size_t start = text.size() > 3 ? text.size() - 3 : 0;
  for (size_t pos = start; pos < text.size(); ++pos) {
    const uint8_t b = static_cast<uint8_t>(text[pos]);
    if (b < 0xC0) continue;  // ASCII or a continuation byte: not a lead
    const Utf8Char c = decode_utf8_char(text, pos);
    if (c.status == Utf8Status::kIncomplete) return pos;
  }
  return text.size();
}

void append_utf8(uint32_t codepoint, std::string& out) {
  if (codepoint < 0x80) {
    out.push_back(static_cast<char>(codepoint));
  } else if (codepoint < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (codepoint >> 6)));
    out.push_back(static_cast<char>(0x80 | (codepoint & 0x3F)));
  } else if (codepoint < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (codepoint >> 12)));
    out.push_back(static_cast<char>(0x80 | ((codepoint >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (codepoint & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (codepoint >> 18)));
    out.push_back(static_cast<char>(0x80 | ((codepoint >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((codepoint >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (codepoint & 0x3F)));
  }
}

}  // namespace crosspoint
