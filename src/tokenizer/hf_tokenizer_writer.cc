#include "tokenizer/hf_tokenizer_writer.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>

#include "formats/gguf.h"
#include "tokenizer/gguf_tokenizer_json.h"

namespace crosspoint {

namespace {

Status write_json(const nlohmann::json& value, const std::filesystem::path& path) {
  const std::filesystem::path part = path.string() + ".part";
  {
    std::ofstream out(part, std::ios::binary | std::ios::trunc);
    if (!out) return io_error(fmt::format("{}: cannot open for writing", part.string()));
    // Non-UTF-8 strings (impossible in a valid GGUF vocab) would throw; replace instead.
    out << value.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
    if (!out) return io_error(fmt::format("{}: write failed", part.string()));
  }
  std::error_code error;
  std::filesystem::rename(part, path, error);
  if (error) return io_error(fmt::format("{}: cannot rename into place: {}", path.string(), error.message()));
  return Status::ok();
}

}  // namespace

Status write_hf_tokenizer_files(const GgufFile& gguf, const std::string& out_dir) {
  CROSSPOINT_ASSIGN_OR_RETURN(nlohmann::json tokenizer_json, tokenizer_json_from_gguf(gguf));
  CROSSPOINT_ASSIGN_OR_RETURN(nlohmann::json config, tokenizer_config_from_gguf(gguf));
  std::error_code error;
  std::filesystem::create_directories(out_dir, error);
  if (error) return io_error(fmt::format("{}: cannot create directory: {}", out_dir, error.message()));
  const std::filesystem::path dir(out_dir);
  CROSSPOINT_RETURN_IF_ERROR(write_json(tokenizer_json, dir / "tokenizer.json"));
  return write_json(config, dir / "tokenizer_config.json");
}

}  // namespace crosspoint
