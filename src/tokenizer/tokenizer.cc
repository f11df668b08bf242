// Tokenizer factories: which files make a tokenizer, and the errors when they are missing
// or corrupt.
#include "tokenizer/tokenizer.h"

#include <fmt/format.h>

#include <filesystem>
#include <new>
#include <stdexcept>

#include "common/mapped_file.h"
#include "formats/gguf.h"
#include "tokenizer/bpe_tokenizer.h"
#include "tokenizer/gguf_tokenizer_json.h"

namespace crosspoint {

namespace {

Result<nlohmann::json> read_json_file(const std::string& path) {
  if (!std::filesystem::exists(path)) return not_found(fmt::format("{}: no such file", path));
  CROSSPOINT_ASSIGN_OR_RETURN(std::string text, read_text_file(path));
  nlohmann::json value = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded()) return corrupt(fmt::format("{}: not valid JSON", path));
  return value;
}

// Builds the tokenizer; a field of the wrong JSON type (which nlohmann reports by
// throwing) becomes a corrupt-file error naming the file instead of a crash.
Result<std::unique_ptr<Tokenizer>> create(const nlohmann::json& tokenizer_json, const nlohmann::json& config,
                                          const std::string& where) {
  try {
    auto result = BpeTokenizer::create(tokenizer_json, config, where);
    if (!result.is_ok()) return result.status();
    return std::unique_ptr<Tokenizer>(std::move(result).value());
  } catch (const nlohmann::json::exception& e) {
    return corrupt(fmt::format("{}: unexpected JSON type: {}", where, e.what()));
  } catch (const std::bad_alloc&) {  // a table far larger than any real tokenizer's
    return resource_exhausted(fmt::format("{}: the tokenizer's tables do not fit in memory", where));
  } catch (const std::length_error&) {
    return corrupt(fmt::format("{}: a table size beyond what any tokenizer needs", where));
  }
}

}  // namespace

Result<std::unique_ptr<Tokenizer>> Tokenizer::from_tokenizer_json(const std::string& path) {
  CROSSPOINT_ASSIGN_OR_RETURN(nlohmann::json tokenizer_json, read_json_file(path));
  // tokenizer_config.json beside it supplies bos/eos when present.
  nlohmann::json config;
  const auto config_path = std::filesystem::path(path).parent_path() / "tokenizer_config.json";
  if (std::filesystem::exists(config_path)) {
    CROSSPOINT_ASSIGN_OR_RETURN(config, read_json_file(config_path.string()));
  }
  return create(tokenizer_json, config, path);
}

Result<std::unique_ptr<Tokenizer>> Tokenizer::from_model_dir(const std::string& dir) {
  if (!std::filesystem::is_directory(dir)) return not_found(fmt::format("{}: no such directory", dir));
  return from_tokenizer_json((std::filesystem::path(dir) / "tokenizer.json").string());
}

Result<std::unique_ptr<Tokenizer>> Tokenizer::from_gguf(const GgufFile& gguf) {
  CROSSPOINT_ASSIGN_OR_RETURN(nlohmann::json tokenizer_json, tokenizer_json_from_gguf(gguf));
  CROSSPOINT_ASSIGN_OR_RETURN(nlohmann::json config, tokenizer_config_from_gguf(gguf));
  return create(tokenizer_json, config, gguf.path());
}

}  // namespace crosspoint
