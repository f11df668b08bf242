// crosspoint convert: a GGUF (llama or qwen2) -> a Hugging Face style directory.
//   crosspoint convert --gguf SmolLM2-135M-Instruct.Q4_1.gguf --out DIR [--force]
// writes config.json, generation_config.json, model.safetensors (fp16, HF names and
// shapes) and tokenizer.json / tokenizer_config.json. Everything is written into a
// sibling scratch directory first and moved into DIR only when all of it succeeded, so a
// failed conversion never leaves a half-written model behind.
#include <cstdio>
#include <filesystem>
#include <string>
#include <unistd.h>

#include "cli/cli_util.h"
#include "cli/commands.h"
#include "common/log.h"
#include "formats/gguf.h"
#include "formats/gguf_to_hf.h"
#include "tokenizer/hf_tokenizer_writer.h"

namespace crosspoint::cli {

namespace {

namespace fs = std::filesystem;

Status check_output_dir(const std::string& out_dir, bool force) {
  std::error_code ec;
  if (!fs::exists(out_dir, ec)) return Status::ok();
  if (!fs::is_directory(out_dir, ec)) return invalid_argument(out_dir + ": exists and is not a directory");
  if (!force) return invalid_argument(out_dir + ": already exists (pass --force to overwrite it)");
  return Status::ok();
}

// Moves every file of scratch_dir into out_dir (replacing files of the same name), then
// removes scratch_dir. A stale shard index would shadow the new model.safetensors.
Status move_into_place(const std::string& scratch_dir, const std::string& out_dir) {
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec) return io_error(out_dir + ": cannot create directory: " + ec.message());
  fs::remove(fs::path(out_dir) / "model.safetensors.index.json", ec);
  for (const auto& entry : fs::directory_iterator(scratch_dir)) {
    const fs::path target = fs::path(out_dir) / entry.path().filename();
    fs::rename(entry.path(), target, ec);
    if (ec) return io_error(target.string() + ": cannot move into place: " + ec.message());
  }
  fs::remove(scratch_dir, ec);
  return Status::ok();
}

Status convert(const std::string& gguf_path, const std::string& out_dir, bool force) {
  CROSSPOINT_RETURN_IF_ERROR(check_output_dir(out_dir, force));
  CROSSPOINT_ASSIGN_OR_RETURN(GgufFile gguf, GgufFile::open(gguf_path));

  const fs::path out_path = fs::absolute(fs::path(out_dir)).lexically_normal();
  const std::string scratch_dir =
      (out_path.parent_path() / ("." + out_path.filename().string() + ".partial-" + std::to_string(::getpid())))
          .string();
  std::error_code ec;
  fs::remove_all(scratch_dir, ec);
  fs::create_directories(scratch_dir, ec);
  if (ec) return io_error(scratch_dir + ": cannot create directory: " + ec.message());

  GgufConversionSummary summary;
  Status status = convert_gguf_to_hf(gguf, scratch_dir, &summary);
  if (status.is_ok()) {
    log_info("writing the tokenizer (tokenizer.json, tokenizer_config.json)");
    status = write_hf_tokenizer_files(gguf, scratch_dir);
  }
  if (status.is_ok()) status = move_into_place(scratch_dir, out_path.string());
  if (!status.is_ok()) {
    fs::remove_all(scratch_dir, ec);
    return status;
  }
  log_info("converted {} ({}): {} tensors, {:.3f} GiB fp16, {:.1f} s -> {}", gguf_path, summary.architecture_name,
           summary.num_tensors, static_cast<double>(summary.num_bytes) / (1024.0 * 1024.0 * 1024.0), summary.seconds,
           out_path.string());
  return Status::ok();
}

}  // namespace

int run_convert(int argc, char** argv) {
  CLI::App app{
      "Convert a GGUF model (llama, qwen2) into a Hugging Face directory: config.json, fp16 "
      "model.safetensors and the tokenizer files."};
  app.name("crosspoint convert");
  std::string gguf_path;
  std::string out_dir;
  bool force = false;
  app.add_option("--gguf", gguf_path, "GGUF file to convert")->required();
  app.add_option("--out", out_dir, "output directory (must not exist unless --force)")->required();
  app.add_flag("--force", force, "overwrite the files of an existing --out directory");
  if (int code = parse_or_exit_code(app, argc, argv); code >= 0) return code;
  Status status = convert(gguf_path, out_dir, force);
  if (!status.is_ok()) return report_error("convert", status);
  return 0;
}

}  // namespace crosspoint::cli
