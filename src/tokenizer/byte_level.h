// The GPT-2 byte-level alphabet: each of the 256 byte values is shown as one printable
// Unicode character (printable Latin-1 bytes as themselves, the others as U+0100 + n), so
// a vocabulary of arbitrary bytes can be stored as text ("Ġworld" is " world").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace crosspoint {

// The byte-level character for byte b, as UTF-8.
const std::string& byte_level_char(uint8_t b);

// Raw bytes -> byte-level text.
std::string bytes_to_byte_level(std::string_view bytes);

// Byte-level text -> raw bytes; nullopt when some character is not in the alphabet.
std::optional<std::string> byte_level_to_bytes(std::string_view text);

}  // namespace crosspoint
