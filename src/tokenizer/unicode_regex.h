// A pre-tokenizer regex compiled once with PCRE2 (UTF + Unicode properties, JIT when
// available) and matched over valid UTF-8 text from any number of threads.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"

namespace crosspoint {

class UnicodeRegex {
 public:
  // where names the file/field for the error ("tokenizer.json: pre_tokenizer.pattern").
  static Result<UnicodeRegex> compile(const std::string& pattern, const std::string& where);

  // Byte ranges [begin, end) of the successive non-empty, non-overlapping matches in
  // text, which must be valid UTF-8.
  void find_all(std::string_view text, std::vector<std::pair<size_t, size_t>>& matches) const;

  const std::string& pattern() const { return pattern_; }

 private:
  struct Compiled;
  std::string pattern_;
  std::shared_ptr<const Compiled> compiled_;
};

}  // namespace crosspoint
