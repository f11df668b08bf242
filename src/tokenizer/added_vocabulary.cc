#include "tokenizer/added_vocabulary.h"

#include <algorithm>

namespace crosspoint {

namespace {
bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }
}  // namespace

void AddedVocabulary::add(AddedToken token) {
  if (token.content.empty()) return;
  auto& bucket = by_first_byte_[static_cast<uint8_t>(token.content[0])];
  tokens_.push_back(std::move(token));
  bucket.push_back(tokens_.size() - 1);
  std::stable_sort(bucket.begin(), bucket.end(),
                   [&](size_t a, size_t b) { return tokens_[a].content.size() > tokens_[b].content.size(); });
}

void AddedVocabulary::split(std::string_view text, bool match_special, std::vector<TextSegment>& segments) const {
  size_t text_begin = 0;  // start of the plain text not yet emitted
  size_t pos = 0;
  while (pos < text.size()) {
    const AddedToken* found = nullptr;
    for (size_t index : by_first_byte_[static_cast<uint8_t>(text[pos])]) {
      const AddedToken& token = tokens_[index];
      if (token.special && !match_special) continue;
      if (text.compare(pos, token.content.size(), token.content) == 0) {
        found = &token;
        break;
      }
    }
    if (found == nullptr) {
      ++pos;
      continue;
    }
    size_t match_begin = pos, match_end = pos + found->content.size();
    if (found->lstrip)
      while (match_begin > text_begin && is_space(text[match_begin - 1])) --match_begin;
    if (found->rstrip)
      while (match_end < text.size() && is_space(text[match_end])) ++match_end;
    if (match_begin > text_begin) segments.push_back({-1, text.substr(text_begin, match_begin - text_begin)});
    segments.push_back({found->id, text.substr(match_begin, match_end - match_begin)});
    text_begin = pos = match_end;
  }
  if (text_begin < text.size()) segments.push_back({-1, text.substr(text_begin)});
}

}  // namespace crosspoint
