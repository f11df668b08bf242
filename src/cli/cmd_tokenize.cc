// crosspoint tokenize: text -> ids (JSON) or ids -> text, with the model's tokenizer.
//   crosspoint tokenize --model default --text "Hello world"        -> [19556, 905]
//   crosspoint tokenize --model DIR --decode "[9707, 1879]"         -> Hello world
//   crosspoint tokenize --gguf FILE --text T                        (tokenizer from GGUF metadata)
//   crosspoint tokenize --gguf FILE --export-hf DIR                 (write tokenizer.json + config)
//   crosspoint tokenize --model DIR --sharegpt FILE                 (encoding speed over ShareGPT)
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/cli_util.h"
#include "cli/commands.h"
#include "common/mapped_file.h"
#include "common/paths.h"
#include "formats/gguf.h"
#include "tokenizer/hf_tokenizer_writer.h"
#include "tokenizer/tokenizer.h"

namespace crosspoint::cli {

namespace {

struct TokenizeOptions {
  std::string model = "default";
  std::string tokenizer_file;
  std::string gguf_file;
  std::string export_dir;
  std::string text;
  std::string decode_json;
  std::string sharegpt_file;
  bool no_special = false;
  bool skip_special = false;
};

Result<std::unique_ptr<Tokenizer>> load_tokenizer(const TokenizeOptions& options) {
  if (!options.gguf_file.empty()) {
    CROSSPOINT_ASSIGN_OR_RETURN(GgufFile gguf, GgufFile::open(options.gguf_file));
    return Tokenizer::from_gguf(gguf);
  }
  if (!options.tokenizer_file.empty()) return Tokenizer::from_tokenizer_json(options.tokenizer_file);
  CROSSPOINT_ASSIGN_OR_RETURN(std::string dir, resolve_model_dir(options.model));
  return Tokenizer::from_model_dir(dir);
}

Result<std::vector<int32_t>> parse_ids(const std::string& text) {
  const nlohmann::json value = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded() || !value.is_array())
    return invalid_argument("--decode: expected a JSON array of token ids, e.g. [9707, 1879]");
  std::vector<int32_t> ids;
  for (const auto& item : value) {
    if (!item.is_number_integer() || item.get<int64_t>() < 0 || item.get<int64_t>() > INT32_MAX)
      return invalid_argument("--decode: every element must be a non-negative integer token id");
    ids.push_back(item.get<int32_t>());
  }
  return ids;
}

// Encodes every turn of every ShareGPT conversation once and prints the throughput as JSON
// (docs/tokenizer.md records it). JSON parsing is outside the timed part.
Status benchmark_sharegpt(const Tokenizer& tokenizer, const std::string& path) {
  CROSSPOINT_ASSIGN_OR_RETURN(std::string text, read_text_file(path));
  const nlohmann::json data = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (data.is_discarded() || !data.is_array()) return corrupt(path + ": not a JSON array of conversations");
  std::vector<std::string> turns;
  for (const auto& conversation : data) {
    if (!conversation.is_object() || !conversation.contains("conversations")) continue;
    for (const auto& turn : conversation["conversations"])
      if (turn.is_object() && turn.contains("value") && turn["value"].is_string()) turns.push_back(turn["value"]);
  }
  size_t num_bytes = 0, num_tokens = 0;
  const auto start = std::chrono::steady_clock::now();
  for (const std::string& turn : turns) {
    num_bytes += turn.size();
    num_tokens += tokenizer.encode(turn, /*parse_special=*/false).size();
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const nlohmann::json report = {{"conversations", data.size()},
                                 {"turns", turns.size()},
                                 {"bytes", num_bytes},
                                 {"tokens", num_tokens},
                                 {"seconds", seconds},
                                 {"tokens_per_second", seconds > 0 ? num_tokens / seconds : 0.0},
                                 {"megabytes_per_second", seconds > 0 ? num_bytes / seconds / 1e6 : 0.0}};
  std::printf("%s\n", report.dump().c_str());
  return Status::ok();
}

Status run(const TokenizeOptions& options) {
  if (!options.export_dir.empty()) {
    if (options.gguf_file.empty()) return invalid_argument("--export-hf needs --gguf FILE");
    CROSSPOINT_ASSIGN_OR_RETURN(GgufFile gguf, GgufFile::open(options.gguf_file));
    CROSSPOINT_RETURN_IF_ERROR(write_hf_tokenizer_files(gguf, options.export_dir));
    std::fprintf(stderr, "wrote %s/tokenizer.json and tokenizer_config.json\n", options.export_dir.c_str());
    return Status::ok();
  }
  CROSSPOINT_ASSIGN_OR_RETURN(std::unique_ptr<Tokenizer> tokenizer, load_tokenizer(options));
  if (!options.sharegpt_file.empty()) return benchmark_sharegpt(*tokenizer, options.sharegpt_file);
  if (!options.decode_json.empty()) {
    CROSSPOINT_ASSIGN_OR_RETURN(std::vector<int32_t> ids, parse_ids(options.decode_json));
    for (int32_t id : ids) {
      if (id >= tokenizer->vocab_size())
        return invalid_argument("--decode: token id " + std::to_string(id) + " is not below the vocabulary size " +
                                std::to_string(tokenizer->vocab_size()));
    }
    const std::string text = tokenizer->decode(ids, options.skip_special);
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fputc('\n', stdout);
    return Status::ok();
  }
  const std::vector<int32_t> ids = tokenizer->encode(options.text, !options.no_special);
  std::printf("%s\n", nlohmann::json(ids).dump().c_str());
  return Status::ok();
}

}  // namespace

int run_tokenize(int argc, char** argv) {
  TokenizeOptions options;
  CLI::App app{"Print the token ids of a text as JSON, or decode ids back to text."};
  app.add_option("--model", options.model, "model directory with tokenizer.json, or 'default'");
  app.add_option("--tokenizer", options.tokenizer_file, "a tokenizer.json to use instead of the model's");
  app.add_option("--gguf", options.gguf_file, "take the tokenizer from a GGUF file's metadata");
  app.add_option("--export-hf", options.export_dir,
                 "with --gguf: write tokenizer.json and tokenizer_config.json into this directory");
  app.add_option("--text", options.text, "text to encode");
  app.add_option("--decode", options.decode_json, "JSON array of ids to decode, e.g. '[9707, 1879]'");
  app.add_option("--sharegpt", options.sharegpt_file, "encode every turn of this ShareGPT JSON and print tokens/s");
  app.add_flag("--no-special", options.no_special, "treat special tokens in the text as plain text");
  app.add_flag("--skip-special", options.skip_special, "with --decode: drop special tokens");
  if (const int code = parse_or_exit_code(app, argc, argv); code >= 0) return code;
  const Status status = run(options);
  if (!status.is_ok()) return report_error("tokenize", status);
  return 0;
}

}  // namespace crosspoint::cli
