#include "tokenizer/piece_decoder.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "tokenizer/metaspace.h"
#include "tokenizer/utf8.h"

namespace crosspoint {

namespace {

constexpr const char* kReplacementCharacter = "\xEF\xBF\xBD";

std::string replace_all(const std::string& text, const std::string& pattern, const std::string& content) {
  if (pattern.empty()) return text;
  std::string out;
  size_t last = 0;
  for (size_t pos = text.find(pattern); pos != std::string::npos; pos = text.find(pattern, last)) {
    out.append(text, last, pos - last);
    out += content;
    last = pos + pattern.size();
  }
  out.append(text, last);
  return out;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

void byte_fallback(std::vector<std::string>& tokens) {
  std::vector<std::string> out;
  out.reserve(tokens.size());
  std::string run;
  size_t run_tokens = 0;
  const auto end_run = [&] {
    if (run_tokens == 0) return;
    if (is_valid_utf8(run)) {
      out.push_back(run);
    } else {
      for (size_t i = 0; i < run_tokens; ++i) out.emplace_back(kReplacementCharacter);
    }
    run.clear();
    run_tokens = 0;
  };
  for (std::string& token : tokens) {
    if (const auto byte = fallback_byte(token)) {
      run.push_back(static_cast<char>(*byte));
      ++run_tokens;
      continue;
    }
    end_run();
    out.push_back(std::move(token));
  }
  end_run();
  tokens = std::move(out);
}

// Up to count copies of content off the start (or end) of token, one character at a time
// as HF's Strip does.
void strip(std::string& token, const std::string& content, int start, int stop) {
  for (int i = 0; i < start && !content.empty() && token.compare(0, content.size(), content) == 0; ++i)
    token.erase(0, content.size());
  for (int i = 0; i < stop && !content.empty() && token.size() >= content.size() &&
                  token.compare(token.size() - content.size(), content.size(), content) == 0;
       ++i)
    token.erase(token.size() - content.size());
}

}  // namespace

std::optional<uint8_t> fallback_byte(const std::string& token) {
  // HF: six bytes, "<0x" ... ">", and the two in between parsed by u8::from_str_radix(_, 16),
  // which also takes a leading '+'.
  if (token.size() != 6 || token.compare(0, 3, "<0x") != 0 || token[5] != '>') return std::nullopt;
  const int high = hex_digit(token[3]), low = hex_digit(token[4]);
  if (token[3] == '+' && low >= 0) return static_cast<uint8_t>(low);
  if (high < 0 || low < 0) return std::nullopt;
  return static_cast<uint8_t>(high * 16 + low);
}

Status PieceDecoder::add_step(const nlohmann::json& spec, const std::string& where, PieceDecoder& decoder) {
  if (!spec.is_object() || !spec.contains("type") || !spec["type"].is_string())
    return corrupt(fmt::format("{}: decoder has no \"type\"", where));
  const std::string type = spec["type"].get<std::string>();
  Step step;
  if (type == "Sequence") {
    if (!spec.contains("decoders") || !spec["decoders"].is_array())
      return corrupt(fmt::format("{}: Sequence decoder without a \"decoders\" array", where));
    for (const auto& item : spec["decoders"]) CROSSPOINT_RETURN_IF_ERROR(add_step(item, where, decoder));
    return Status::ok();
  }
  if (type == "Replace") {
    const auto pattern = spec.find("pattern");
    if (pattern == spec.end() || !pattern->is_object() || !pattern->contains("String") ||
        !(*pattern)["String"].is_string() || !spec.contains("content") || !spec["content"].is_string())
      return unsupported(fmt::format("{}: Replace decoder without a String pattern and a content", where));
    step.kind = Step::Kind::kReplace;
    step.pattern = (*pattern)["String"].get<std::string>();
    step.content = spec["content"].get<std::string>();
  } else if (type == "ByteFallback") {
    step.kind = Step::Kind::kByteFallback;
  } else if (type == "Fuse") {
    step.kind = Step::Kind::kFuse;
  } else if (type == "Strip") {
    step.kind = Step::Kind::kStrip;
    step.content = spec.value("content", " ");
    step.start = spec.value("start", 0);
    step.stop = spec.value("stop", 0);
    if (step.start < 0 || step.stop < 0) return corrupt(fmt::format("{}: Strip decoder with a negative count", where));
    // After Fuse the one token's end is the stream's end, which a stream cannot wait for.
    for (const Step& earlier : decoder.steps_)
      if (earlier.kind == Step::Kind::kFuse && step.stop > 0)
        return unsupported(fmt::format("{}: Strip decoder with stop > 0 after Fuse", where));
  } else if (type == "Metaspace") {
    step.kind = Step::Kind::kMetaspace;
    step.pattern = spec.value("replacement", "\xE2\x96\x81");
    CROSSPOINT_ASSIGN_OR_RETURN(PrependScheme scheme, parse_prepend_scheme(spec, where));
    step.strip_first = scheme != PrependScheme::kNever;
  } else {
    return unsupported(
        fmt::format("{}: decoder type \"{}\" (supported here: Replace, ByteFallback, Fuse, Strip, Metaspace, Sequence)",
                    where, type));
  }
  decoder.steps_.push_back(std::move(step));
  return Status::ok();
}

Result<PieceDecoder> PieceDecoder::from_json(const nlohmann::json& spec, const std::string& where) {
  PieceDecoder decoder;
  if (spec.is_null()) return decoder;
  CROSSPOINT_RETURN_IF_ERROR(add_step(spec, where, decoder));
  return decoder;
}

bool PieceDecoder::has_byte_fallback() const {
  for (const Step& step : steps_)
    if (step.kind == Step::Kind::kByteFallback) return true;
  return false;
}

std::string PieceDecoder::decode(std::vector<std::string> tokens, bool first) const {
  // fused: the tokens are one token that spans the whole stream, so it is the stream's first
  // token in every piece.
  bool fused = false;
  for (const Step& step : steps_) {
    switch (step.kind) {
      case Step::Kind::kReplace:
        for (std::string& token : tokens) token = replace_all(token, step.pattern, step.content);
        break;
      case Step::Kind::kByteFallback: byte_fallback(tokens); break;
      case Step::Kind::kFuse: {
        std::string all;
        for (const std::string& token : tokens) all += token;
        tokens.assign(1, std::move(all));
        fused = true;
        break;
      }
      case Step::Kind::kStrip:
        for (size_t i = 0; i < tokens.size(); ++i)
          strip(tokens[i], step.content, fused && !first ? 0 : step.start, step.stop);
        break;
      case Step::Kind::kMetaspace:
        for (size_t i = 0; i < tokens.size(); ++i) {
          const bool first_token = i == 0 && (first || fused);
          tokens[i] = replace_all(tokens[i], step.pattern, first_token && step.strip_first ? "" : " ");
        }
        break;
    }
  }
  std::string text;
  for (const std::string& token : tokens) text += token;
  return text;
}

}  // namespace crosspoint
