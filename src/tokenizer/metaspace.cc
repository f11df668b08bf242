#include "tokenizer/metaspace.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

namespace crosspoint {

Result<PrependScheme> parse_prepend_scheme(const nlohmann::json& spec, const std::string& where) {
  if (spec.contains("prepend_scheme") && spec["prepend_scheme"].is_string()) {
    const std::string scheme = spec["prepend_scheme"].get<std::string>();
    if (scheme == "always") return PrependScheme::kAlways;
    if (scheme == "first") return PrependScheme::kFirst;
    if (scheme == "never") return PrependScheme::kNever;
    return corrupt(fmt::format("{}: Metaspace prepend_scheme \"{}\" (always, first or never)", where, scheme));
  }
  // Files older than prepend_scheme say add_prefix_space (true: always).
  return spec.value("add_prefix_space", true) ? PrependScheme::kAlways : PrependScheme::kNever;
}

Result<MetaspacePreTokenizer> MetaspacePreTokenizer::from_json(const nlohmann::json& spec, const std::string& where) {
  MetaspacePreTokenizer metaspace;
  if (spec.contains("replacement")) {
    if (!spec["replacement"].is_string() || spec["replacement"].get<std::string>().empty())
      return corrupt(fmt::format("{}: Metaspace replacement is not a character", where));
    metaspace.replacement_ = spec["replacement"].get<std::string>();
  }
  CROSSPOINT_ASSIGN_OR_RETURN(metaspace.prepend_scheme_, parse_prepend_scheme(spec, where));
  metaspace.split_ = spec.value("split", true);
  return metaspace;
}

void MetaspacePreTokenizer::split(std::string_view text, bool at_start, std::vector<std::string>& words) const {
  if (text.empty()) return;
  std::string replaced;
  replaced.reserve(text.size() + replacement_.size());
  for (char c : text) {
    if (c == ' ') replaced += replacement_;
    else replaced.push_back(c);
  }
  const bool starts_with_replacement = replaced.compare(0, replacement_.size(), replacement_) == 0;
  if (!starts_with_replacement &&
      (prepend_scheme_ == PrependScheme::kAlways || (prepend_scheme_ == PrependScheme::kFirst && at_start)))
    replaced.insert(0, replacement_);
  if (!split_) {
    words.push_back(std::move(replaced));
    return;
  }
  // MergedWithNext: each replacement starts a new word.
  size_t begin = 0;
  for (size_t pos = replaced.find(replacement_, 1); pos != std::string::npos;
       pos = replaced.find(replacement_, pos + replacement_.size())) {
    if (pos > begin) words.push_back(replaced.substr(begin, pos - begin));
    begin = pos;
  }
  if (begin < replaced.size()) words.push_back(replaced.substr(begin));
}

}  // namespace crosspoint
