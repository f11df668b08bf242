#include "tokenizer/pre_tokenizer.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

namespace crosspoint {

const char* const kGpt2SplitPattern = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

namespace {

// Escapes a literal for use inside a PCRE2 pattern (Split with {"String": ...}).
std::string quote_literal(const std::string& literal) { return "\\Q" + literal + "\\E"; }

Result<SplitBehavior> parse_behavior(const std::string& name, const std::string& where) {
  if (name == "Isolated") return SplitBehavior::kIsolated;
  if (name == "Removed") return SplitBehavior::kRemoved;
  if (name == "MergedWithPrevious") return SplitBehavior::kMergedWithPrevious;
  if (name == "MergedWithNext") return SplitBehavior::kMergedWithNext;
  if (name == "Contiguous") return SplitBehavior::kContiguous;
  return corrupt(fmt::format("{}: unknown Split behavior \"{}\"", where, name));
}

struct Segment {
  size_t begin, end;
  bool is_match;
};

// Cuts one piece by a step's regex matches according to its behavior (as HF does).
void apply_split(const PreTokenizerStep& step, const std::string& piece, std::vector<std::string>& out,
                 std::vector<std::pair<size_t, size_t>>& matches_scratch) {
  matches_scratch.clear();
  step.regex.find_all(piece, matches_scratch);
  if (matches_scratch.empty() && !step.invert) {
    if (!piece.empty()) out.push_back(piece);
    return;
  }
  std::vector<Segment> segments;
  size_t last = 0;
  for (const auto& [begin, end] : matches_scratch) {
    if (begin > last) segments.push_back({last, begin, step.invert});
    segments.push_back({begin, end, !step.invert});
    last = end;
  }
  if (last < piece.size()) segments.push_back({last, piece.size(), step.invert});

  size_t pending_begin = 0;  // start of text carried into the next segment
  bool have_pending = false;
  const auto emit = [&](size_t begin, size_t end) {
    if (end > begin) out.push_back(piece.substr(begin, end - begin));
  };
  for (size_t i = 0; i < segments.size(); ++i) {
    const Segment& s = segments[i];
    switch (step.behavior) {
      case SplitBehavior::kIsolated: emit(s.begin, s.end); break;
      case SplitBehavior::kRemoved:
        if (!s.is_match) emit(s.begin, s.end);
        break;
      case SplitBehavior::kMergedWithPrevious:
        // A match joins the piece before it.
        if (s.is_match && !out.empty() && i > 0 && !segments[i - 1].is_match) {
          out.back() += piece.substr(s.begin, s.end - s.begin);
        } else {
          emit(s.begin, s.end);
        }
        break;
      case SplitBehavior::kMergedWithNext:
        // A match joins the piece after it.
        if (s.is_match) {
          if (!have_pending) pending_begin = s.begin;
          have_pending = true;
          if (i + 1 == segments.size()) emit(pending_begin, s.end);
        } else {
          emit(have_pending ? pending_begin : s.begin, s.end);
          have_pending = false;
        }
        break;
      case SplitBehavior::kContiguous:
        // Consecutive matches become one piece.
        if (s.is_match && i > 0 && segments[i - 1].is_match && !out.empty()) {
          out.back() += piece.substr(s.begin, s.end - s.begin);
        } else {
          emit(s.begin, s.end);
        }
        break;
    }
  }
}

}  // namespace

Result<PreTokenizer> PreTokenizer::from_json(const nlohmann::json& spec, const std::string& where,
                                             bool* has_byte_level) {
  PreTokenizer pre;
  *has_byte_level = false;
  if (!spec.is_null()) CROSSPOINT_RETURN_IF_ERROR(pre.add_step(spec, where, has_byte_level));
  return pre;
}

Status PreTokenizer::add_step(const nlohmann::json& spec, const std::string& where, bool* has_byte_level) {
  if (!spec.is_object() || !spec.contains("type") || !spec["type"].is_string())
    return corrupt(fmt::format("{}: pre_tokenizer entry has no \"type\"", where));
  const std::string type = spec["type"].get<std::string>();
  if (type == "Sequence") {
    if (!spec.contains("pretokenizers") || !spec["pretokenizers"].is_array())
      return corrupt(fmt::format("{}: Sequence pre_tokenizer without \"pretokenizers\"", where));
    for (const auto& item : spec["pretokenizers"]) CROSSPOINT_RETURN_IF_ERROR(add_step(item, where, has_byte_level));
    return Status::ok();
  }
  if (type == "Split") {
    const auto& pattern = spec.value("pattern", nlohmann::json());
    std::string regex_text;
    if (pattern.is_object() && pattern.contains("Regex") && pattern["Regex"].is_string()) {
      regex_text = pattern["Regex"].get<std::string>();
    } else if (pattern.is_object() && pattern.contains("String") && pattern["String"].is_string()) {
      regex_text = quote_literal(pattern["String"].get<std::string>());
    } else {
      return corrupt(
          fmt::format("{}: Split pre_tokenizer needs pattern {{\"Regex\": ...}} or {{\"String\": ...}}", where));
    }
    PreTokenizerStep step;
    CROSSPOINT_ASSIGN_OR_RETURN(step.regex, UnicodeRegex::compile(regex_text, where + ": Split pattern"));
    CROSSPOINT_ASSIGN_OR_RETURN(step.behavior, parse_behavior(spec.value("behavior", "Isolated"), where));
    step.invert = spec.value("invert", false);
    steps_.push_back(std::move(step));
    return Status::ok();
  }
  if (type == "Digits") {
    // Rust's char::is_numeric is the N categories (Nd, Nl, No): \p{N}.
    PreTokenizerStep step;
    const bool individual = spec.value("individual_digits", false);
    CROSSPOINT_ASSIGN_OR_RETURN(step.regex, UnicodeRegex::compile(individual ? R"(\p{N})" : R"(\p{N}+)", where));
    step.behavior = SplitBehavior::kIsolated;
    steps_.push_back(std::move(step));
    return Status::ok();
  }
  if (type == "ByteLevel") {
    *has_byte_level = true;
    if (spec.value("add_prefix_space", false)) {
      PreTokenizerStep step;
      step.kind = PreTokenizerStep::Kind::kAddPrefixSpace;
      steps_.push_back(std::move(step));
    }
    if (spec.value("use_regex", true)) {
      PreTokenizerStep step;
      CROSSPOINT_ASSIGN_OR_RETURN(step.regex, UnicodeRegex::compile(kGpt2SplitPattern, where));
      step.behavior = SplitBehavior::kIsolated;
      steps_.push_back(std::move(step));
    }
    return Status::ok();
  }
  return unsupported(
      fmt::format("{}: pre_tokenizer type \"{}\" (supported: Split, Digits, ByteLevel, Sequence)", where, type));
}

void PreTokenizer::split(std::string_view text, std::vector<std::string>& words) const {
  std::vector<std::string> pieces{std::string(text)};
  std::vector<std::string> next;
  std::vector<std::pair<size_t, size_t>> matches_scratch;
  for (const PreTokenizerStep& step : steps_) {
    next.clear();
    for (std::string& piece : pieces) {
      if (step.kind == PreTokenizerStep::Kind::kAddPrefixSpace) {
        // HF prepends a space to every piece that does not start with one.
        if (!piece.empty() && piece.front() != ' ') piece.insert(piece.begin(), ' ');
        next.push_back(std::move(piece));
      } else {
        apply_split(step, piece, next, matches_scratch);
      }
    }
    pieces.swap(next);
  }
  for (std::string& piece : pieces)
    if (!piece.empty()) words.push_back(std::move(piece));
}

}  // namespace crosspoint
