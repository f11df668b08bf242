#include "tokenizer/normalizer.h"

#include <fmt/format.h>
#include <unicode/bytestream.h>
#include <unicode/normalizer2.h>

#include <nlohmann/json.hpp>

namespace crosspoint {

namespace {

// Every occurrence of pattern (non-empty) in text replaced by content, left to right.
std::string replace_all(std::string_view text, const std::string& pattern, const std::string& content) {
  std::string out;
  out.reserve(text.size());
  size_t last = 0;
  for (size_t pos = text.find(pattern); pos != std::string_view::npos; pos = text.find(pattern, last)) {
    out.append(text.substr(last, pos - last));
    out += content;
    last = pos + pattern.size();
  }
  out.append(text.substr(last));
  return out;
}

const icu::Normalizer2* icu_instance(NormalizationForm form) {
  UErrorCode error = U_ZERO_ERROR;
  switch (form) {
    case NormalizationForm::kNfc: return icu::Normalizer2::getNFCInstance(error);
    case NormalizationForm::kNfd: return icu::Normalizer2::getNFDInstance(error);
    case NormalizationForm::kNfkc: return icu::Normalizer2::getNFKCInstance(error);
    case NormalizationForm::kNfkd: return icu::Normalizer2::getNFKDInstance(error);
  }
  return nullptr;
}

bool is_ascii(std::string_view text) {
  for (char c : text)
    if (static_cast<uint8_t>(c) >= 0x80) return false;
  return true;
}

}  // namespace

Result<Normalizer::Step> Normalizer::parse_step(const nlohmann::json& spec, const std::string& where) {
  if (!spec.is_object() || !spec.contains("type") || !spec["type"].is_string())
    return corrupt(fmt::format("{}: normalizer has no \"type\"", where));
  const std::string type = spec["type"].get<std::string>();
  Step step;
  if (type == "NFC" || type == "NFD" || type == "NFKC" || type == "NFKD") {
    step.form = type == "NFC"    ? NormalizationForm::kNfc
                : type == "NFD"  ? NormalizationForm::kNfd
                : type == "NFKC" ? NormalizationForm::kNfkc
                                 : NormalizationForm::kNfkd;
    return step;
  }
  if (type == "Prepend") {
    if (!spec.contains("prepend") || !spec["prepend"].is_string())
      return corrupt(fmt::format("{}: Prepend normalizer without a string \"prepend\"", where));
    step.kind = Step::Kind::kPrepend;
    step.text = spec["prepend"].get<std::string>();
    return step;
  }
  if (type == "Replace") {
    const auto pattern = spec.find("pattern");
    if (pattern == spec.end() || !pattern->is_object() || !spec.contains("content") || !spec["content"].is_string())
      return corrupt(fmt::format("{}: Replace normalizer needs a \"pattern\" object and a string \"content\"", where));
    if (!pattern->contains("String") || !(*pattern)["String"].is_string())
      return unsupported(fmt::format("{}: Replace normalizer with a Regex pattern (only String is supported)", where));
    step.kind = Step::Kind::kReplace;
    step.text = (*pattern)["String"].get<std::string>();
    step.content = spec["content"].get<std::string>();
    if (step.text.empty()) return corrupt(fmt::format("{}: Replace normalizer with an empty pattern", where));
    return step;
  }
  return unsupported(fmt::format(
      "{}: normalizer type \"{}\" (supported: NFC, NFD, NFKC, NFKD, Prepend, Replace, Sequence)", where, type));
}

Result<Normalizer> Normalizer::from_json(const nlohmann::json& spec, const std::string& where) {
  Normalizer normalizer;
  if (spec.is_null()) return normalizer;
  if (spec.is_object() && spec.value("type", "") == "Sequence") {
    if (!spec.contains("normalizers") || !spec["normalizers"].is_array())
      return corrupt(fmt::format("{}: Sequence normalizer without a \"normalizers\" array", where));
    for (const auto& item : spec["normalizers"]) {
      CROSSPOINT_ASSIGN_OR_RETURN(Step step, parse_step(item, where));
      normalizer.steps_.push_back(std::move(step));
    }
    return normalizer;
  }
  CROSSPOINT_ASSIGN_OR_RETURN(Step step, parse_step(spec, where));
  normalizer.steps_.push_back(std::move(step));
  return normalizer;
}

std::string Normalizer::apply(std::string_view text) const {
  std::string current(text);
  for (const Step& step : steps_) {
    if (step.kind == Step::Kind::kPrepend) {
      if (!current.empty()) current.insert(0, step.text);  // HF leaves empty text alone
      continue;
    }
    if (step.kind == Step::Kind::kReplace) {
      current = replace_all(current, step.text, step.content);
      continue;
    }
    // ASCII is unchanged by every normalisation form: the common case costs one scan.
    if (is_ascii(current)) continue;
    const icu::Normalizer2* instance = icu_instance(step.form);
    CROSSPOINT_CHECK(instance != nullptr, "ICU normalizer data is missing");
    UErrorCode error = U_ZERO_ERROR;
    if (instance->isNormalizedUTF8(icu::StringPiece(current.data(), static_cast<int32_t>(current.size())), error) &&
        U_SUCCESS(error))
      continue;
    std::string normalized;
    icu::StringByteSink<std::string> sink(&normalized);
    error = U_ZERO_ERROR;
    instance->normalizeUTF8(0, icu::StringPiece(current.data(), static_cast<int32_t>(current.size())), sink, nullptr,
                            error);
    CROSSPOINT_CHECK(U_SUCCESS(error), "ICU normalisation failed on valid UTF-8");
    current = std::move(normalized);
  }
  return current;
}

}  // namespace crosspoint
