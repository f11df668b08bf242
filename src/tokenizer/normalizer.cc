#include "tokenizer/normalizer.h"

#include <fmt/format.h>
#include <unicode/bytestream.h>
#include <unicode/normalizer2.h>

#include <nlohmann/json.hpp>

namespace crosspoint {

namespace {

Result<NormalizationForm> parse_form(const nlohmann::json& spec, const std::string& where) {
  if (!spec.is_object() || !spec.contains("type") || !spec["type"].is_string())
    return corrupt(fmt::format("{}: normalizer has no \"type\"", where));
  const std::string type = spec["type"].get<std::string>();
  if (type == "NFC") return NormalizationForm::kNfc;
  if (type == "NFD") return NormalizationForm::kNfd;
  if (type == "NFKC") return NormalizationForm::kNfkc;
  if (type == "NFKD") return NormalizationForm::kNfkd;
  return unsupported(
      fmt::format("{}: normalizer type \"{}\" (supported: NFC, NFD, NFKC, NFKD, Sequence)", where, type));
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

Result<Normalizer> Normalizer::from_json(const nlohmann::json& spec, const std::string& where) {
  Normalizer normalizer;
  if (spec.is_null()) return normalizer;
  if (spec.is_object() && spec.value("type", "") == "Sequence") {
    if (!spec.contains("normalizers") || !spec["normalizers"].is_array())
      return corrupt(fmt::format("{}: Sequence normalizer without a \"normalizers\" array", where));
    for (const auto& item : spec["normalizers"]) {
      CROSSPOINT_ASSIGN_OR_RETURN(NormalizationForm form, parse_form(item, where));
      normalizer.forms_.push_back(form);
    }
    return normalizer;
  }
  CROSSPOINT_ASSIGN_OR_RETURN(NormalizationForm form, parse_form(spec, where));
  normalizer.forms_.push_back(form);
  return normalizer;
}

std::string Normalizer::apply(std::string_view text) const {
  // ASCII is unchanged by every normalisation form: the common case costs one scan.
  if (forms_.empty() || is_ascii(text)) return std::string(text);
  std::string current(text);
  for (NormalizationForm form : forms_) {
    const icu::Normalizer2* instance = icu_instance(form);
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
