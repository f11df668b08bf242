// What every fuzz target that builds a tokenizer does with one: encodes a short text that
// mixes ASCII, multi-byte UTF-8, digits and ChatML special tokens, decodes the ids (whole and
// streamed), and looks up the first ids; any id out of the vocabulary is a bug.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace crosspoint::fuzz {

inline void exercise_tokenizer(const Tokenizer& tokenizer) {
  static const std::string kText =
      "<|im_start|>user\nHello, world! 12345 h\xC3\xA9llo \xE4\xBD\xA0\xE5\xA5\xBD  \t\n\n's "
      "'ll<|im_end|>\n\xF0\x9F\x98\x80";
  const int32_t vocab_size = tokenizer.vocab_size();
  for (bool parse_special : {true, false}) {
    const std::vector<int32_t> ids = tokenizer.encode(kText, parse_special);
    for (int32_t id : ids) {
      if (id < 0 || id >= vocab_size) __builtin_trap();
    }
    (void)tokenizer.decode(ids, /*skip_special=*/false);
    (void)tokenizer.decode(ids, /*skip_special=*/true);
    IncrementalDecoder decoder(tokenizer);
    for (int32_t id : ids) (void)decoder.push(id);
    (void)decoder.flush();
  }
  for (int32_t id = 0; id < vocab_size && id < 64; ++id) {
    (void)tokenizer.token_bytes(id);
    (void)tokenizer.is_special(id);
  }
  (void)tokenizer.token_id("<|im_end|>");
  (void)tokenizer.bos_token_id();
  (void)tokenizer.eos_token_ids();
}

}  // namespace crosspoint::fuzz
