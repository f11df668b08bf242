// Added tokens (tokenizer.json "added_tokens"): strings such as "<|im_start|>" that are
// cut out of the text before normalisation and BPE and become one id each. Special ones
// are matched only when the caller asks for it; non-special ones always (as HF's
// encode_special_tokens switch does).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace crosspoint {

struct AddedToken {
  int32_t id = -1;
  std::string content;
  bool special = false;
  bool lstrip = false;  // also swallows whitespace on its left
  bool rstrip = false;  // also swallows whitespace on its right
};

// One piece of the input: either an added token or text for the normal pipeline.
struct TextSegment {
  int32_t added_token_id = -1;  // >= 0: this segment is that added token
  std::string_view text;        // the text (for an added token: what it matched)
};

class AddedVocabulary {
 public:
  void add(AddedToken token);
  const std::vector<AddedToken>& tokens() const { return tokens_; }

  // Leftmost-longest matching, as HF's Aho-Corasick matcher does.
  void split(std::string_view text, bool match_special, std::vector<TextSegment>& segments) const;

 private:
  std::vector<AddedToken> tokens_;
  // Indices into tokens_ by first byte, longest content first.
  std::array<std::vector<size_t>, 256> by_first_byte_;
};

}  // namespace crosspoint
