#include "tokenizer/byte_level.h"

#include <array>
#include <cstdint>
#include <unordered_map>

#include "tokenizer/utf8.h"

namespace crosspoint {

namespace {

struct ByteLevelTables {
  std::array<std::string, 256> byte_to_char;           // UTF-8 of the character for each byte
  std::unordered_map<uint32_t, uint8_t> char_to_byte;  // code point -> byte

  ByteLevelTables() {
    uint32_t next_extra = 256;
    for (uint32_t b = 0; b < 256; ++b) {
      const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
      const uint32_t codepoint = printable ? b : next_extra++;
      append_utf8(codepoint, byte_to_char[b]);
      char_to_byte[codepoint] = static_cast<uint8_t>(b);
    }
  }
};

const ByteLevelTables& tables() {
  static const ByteLevelTables t;
  return t;
}

}  // namespace

const std::string& byte_level_char(uint8_t b) { return tables().byte_to_char[b]; }

std::string bytes_to_byte_level(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) out += tables().byte_to_char[static_cast<uint8_t>(c)];
  return out;
}

std::optional<std::string> byte_level_to_bytes(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    const Utf8Char c = decode_utf8_char(text, pos);
    if (c.status != Utf8Status::kValid) return std::nullopt;
    const auto it = tables().char_to_byte.find(c.codepoint);
    if (it == tables().char_to_byte.end()) return std::nullopt;
    out.push_back(static_cast<char>(it->second));
    pos += c.length;
  }
  return out;
}

}  // namespace crosspoint
