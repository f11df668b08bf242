// Typed access to GGUF metadata values; errors name the key, the file and the stored type.
#include <limits>

#include "formats/gguf.h"

namespace crosspoint {

namespace {

const char* value_kind(const GgufValue& value) {
  switch (value.index()) {
    case 0: return "unsigned integer";
    case 1: return "signed integer";
    case 2: return "float";
    case 3: return "bool";
    case 4: return "string";
    case 5: return "integer array";
    case 6: return "float array";
    case 7: return "string array";
    case 8: return "bool array";
  }
  return "?";
}

}  // namespace

#define CROSSPOINT_GGUF_LOOKUP(key, wanted)                                                                     \
  auto it = metadata_.find(key);                                                                                \
  if (it == metadata_.end()) { return not_found(path() + ": metadata key '" + key + "' is missing"); }          \
  const GgufValue& value = it->second;                                                                          \
  auto wrong_type = [&]() {                                                                                     \
    return invalid_argument(path() + ": metadata key '" + key + "' is a " + value_kind(value) + ", expected " + \
                            wanted);                                                                            \
  }

Result<std::string> GgufFile::get_string(const std::string& key) const {
  CROSSPOINT_GGUF_LOOKUP(key, "a string");
  if (const auto* v = std::get_if<std::string>(&value)) return *v;
  return wrong_type();
}

Result<int64_t> GgufFile::get_int(const std::string& key) const {
  CROSSPOINT_GGUF_LOOKUP(key, "an integer");
  if (const auto* v = std::get_if<int64_t>(&value)) return *v;
  if (const auto* v = std::get_if<uint64_t>(&value)) {
    if (*v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return invalid_argument(path() + ": metadata key '" + key + "' = " + std::to_string(*v) + " exceeds int64");
    }
    return static_cast<int64_t>(*v);
  }
  return wrong_type();
}

Result<double> GgufFile::get_float(const std::string& key) const {
  CROSSPOINT_GGUF_LOOKUP(key, "a number");
  if (const auto* v = std::get_if<double>(&value)) return *v;
  if (const auto* v = std::get_if<int64_t>(&value)) return static_cast<double>(*v);
  if (const auto* v = std::get_if<uint64_t>(&value)) return static_cast<double>(*v);
  return wrong_type();
}

Result<bool> GgufFile::get_bool(const std::string& key) const {
  CROSSPOINT_GGUF_LOOKUP(key, "a bool");
  if (const auto* v = std::get_if<bool>(&value)) return *v;
  return wrong_type();
}

Result<std::vector<std::string>> GgufFile::get_string_array(const std::string& key) const {
  CROSSPOINT_GGUF_LOOKUP(key, "a string array");
  if (const auto* v = std::get_if<std::vector<std::string>>(&value)) return *v;
  return wrong_type();
}

Result<std::vector<int64_t>> GgufFile::get_int_array(const std::string& key) const {
  CROSSPOINT_GGUF_LOOKUP(key, "an integer array");
  if (const auto* v = std::get_if<std::vector<int64_t>>(&value)) return *v;
  return wrong_type();
}

Result<std::vector<double>> GgufFile::get_float_array(const std::string& key) const {
  CROSSPOINT_GGUF_LOOKUP(key, "a float array");
  if (const auto* v = std::get_if<std::vector<double>>(&value)) return *v;
  return wrong_type();
}

#undef CROSSPOINT_GGUF_LOOKUP

}  // namespace crosspoint
