#include "tokenizer/gguf_tokenizer_json.h"

#include <fmt/format.h>

#include <unordered_set>

#include "formats/gguf.h"
#include "tokenizer/gguf_spm_vocab.h"
#include "tokenizer/pre_tokenizer.h"

namespace crosspoint {

namespace {

// llama.cpp token types (tokenizer.ggml.token_type).
constexpr int64_t kTokenTypeControl = 3;
constexpr int64_t kTokenTypeUserDefined = 4;
constexpr int64_t kTokenTypeUnused = 5;

// Qwen2 (and Qwen2.5) split pattern, as in their tokenizer.json.
constexpr const char* kQwen2Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// Llama 3 split pattern: numbers in groups of up to three digits.
constexpr const char* kLlama3Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

nlohmann::json byte_level(bool use_regex, bool trim_offsets) {
  return {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", trim_offsets}, {"use_regex", use_regex}};
}

nlohmann::json split_then_byte_level(const char* pattern) {
  return {{"type", "Sequence"},
          {"pretokenizers",
           {{{"type", "Split"}, {"pattern", {{"Regex", pattern}}}, {"behavior", "Isolated"}, {"invert", false}},
            byte_level(false, false)}}};
}

std::string token_or_empty(const std::vector<std::string>& tokens, const GgufFile& gguf, const char* key) {
  auto id = gguf.get_int(key);
  if (!id.is_ok() || *id < 0 || *id >= static_cast<int64_t>(tokens.size())) return {};
  return tokens[static_cast<size_t>(*id)];
}

}  // namespace

Result<PreTokenizerSpec> pre_tokenizer_for_llama_cpp_name(const std::string& name, const std::string& where) {
  PreTokenizerSpec spec;
  spec.normalizer = nullptr;
  if (name == "qwen2") {
    spec.normalizer = {{"type", "NFC"}};
    spec.pre_tokenizer = split_then_byte_level(kQwen2Pattern);
  } else if (name == "smollm") {
    // SmolLM/SmolLM2: every digit alone, then GPT-2's ByteLevel regex.
    spec.pre_tokenizer = {
        {"type", "Sequence"},
        {"pretokenizers", {{{"type", "Digits"}, {"individual_digits", true}}, byte_level(true, true)}}};
  } else if (name == "gpt-2" || name == "default" || name.empty()) {
    spec.pre_tokenizer = byte_level(true, true);
  } else if (name == "llama-bpe" || name == "llama3") {
    spec.pre_tokenizer = split_then_byte_level(kLlama3Pattern);
    spec.ignore_merges = true;
  } else {
    return unsupported(
        fmt::format("{}: tokenizer.ggml.pre \"{}\" (supported: qwen2, smollm, gpt-2, llama-bpe)", where, name));
  }
  return spec;
}

Result<nlohmann::json> tokenizer_json_from_gguf(const GgufFile& gguf) {
  const std::string& where = gguf.path();
  CROSSPOINT_ASSIGN_OR_RETURN(std::string model_name, gguf.get_string("tokenizer.ggml.model"));
  if (model_name == "llama") return spm_tokenizer_json_from_gguf(gguf);
  if (model_name != "gpt2")
    return unsupported(
        fmt::format("{}: tokenizer.ggml.model \"{}\" (supported: \"gpt2\" byte-level BPE, \"llama\" SentencePiece)",
                    where, model_name));
  CROSSPOINT_ASSIGN_OR_RETURN(std::vector<std::string> tokens, gguf.get_string_array("tokenizer.ggml.tokens"));
  CROSSPOINT_ASSIGN_OR_RETURN(std::vector<std::string> merges, gguf.get_string_array("tokenizer.ggml.merges"));
  std::vector<int64_t> token_types(tokens.size(), 1);
  if (gguf.has("tokenizer.ggml.token_type")) {
    CROSSPOINT_ASSIGN_OR_RETURN(token_types, gguf.get_int_array("tokenizer.ggml.token_type"));
    if (token_types.size() != tokens.size())
      return corrupt(fmt::format("{}: tokenizer.ggml.token_type has {} entries for {} tokens", where,
                                 token_types.size(), tokens.size()));
  }
  std::string pre_name = "default";
  if (gguf.has("tokenizer.ggml.pre")) { CROSSPOINT_ASSIGN_OR_RETURN(pre_name, gguf.get_string("tokenizer.ggml.pre")); }
  CROSSPOINT_ASSIGN_OR_RETURN(PreTokenizerSpec pre, pre_tokenizer_for_llama_cpp_name(pre_name, where));

  nlohmann::json vocab = nlohmann::json::object();
  nlohmann::json added_tokens = nlohmann::json::array();
  std::unordered_set<std::string> seen;
  for (size_t id = 0; id < tokens.size(); ++id) {
    const std::string& text = tokens[id];
    const int64_t type = token_types[id];
    if (type == kTokenTypeUnused) continue;
    if (!seen.insert(text).second) continue;  // a repeated text keeps its first id
    vocab[text] = id;
    if (type == kTokenTypeControl || type == kTokenTypeUserDefined) {
      added_tokens.push_back({{"id", id},
                              {"content", text},
                              {"single_word", false},
                              {"lstrip", false},
                              {"rstrip", false},
                              {"normalized", false},
                              {"special", type == kTokenTypeControl}});
    }
  }
  nlohmann::json merge_list = nlohmann::json::array();
  for (const std::string& merge : merges) merge_list.push_back(merge);

  nlohmann::json model = {{"type", "BPE"},
                          {"dropout", nullptr},
                          {"unk_token", nullptr},
                          {"continuing_subword_prefix", ""},
                          {"end_of_word_suffix", ""},
                          {"fuse_unk", false},
                          {"byte_fallback", false},
                          {"ignore_merges", pre.ignore_merges},
                          {"vocab", std::move(vocab)},
                          {"merges", std::move(merge_list)}};
  return nlohmann::json{{"version", "1.0"},
                        {"truncation", nullptr},
                        {"padding", nullptr},
                        {"added_tokens", std::move(added_tokens)},
                        {"normalizer", pre.normalizer},
                        {"pre_tokenizer", pre.pre_tokenizer},
                        {"post_processor", byte_level(false, false)},
                        {"decoder", byte_level(true, true)},
                        {"model", std::move(model)}};
}

Result<nlohmann::json> tokenizer_config_from_gguf(const GgufFile& gguf) {
  CROSSPOINT_ASSIGN_OR_RETURN(std::vector<std::string> tokens, gguf.get_string_array("tokenizer.ggml.tokens"));
  std::vector<int64_t> token_types(tokens.size(), 1);
  if (gguf.has("tokenizer.ggml.token_type")) {
    CROSSPOINT_ASSIGN_OR_RETURN(token_types, gguf.get_int_array("tokenizer.ggml.token_type"));
  }
  nlohmann::json config = nlohmann::json::object();
  nlohmann::json added_tokens_decoder = nlohmann::json::object();
  for (size_t id = 0; id < tokens.size() && id < token_types.size(); ++id) {
    if (token_types[id] != kTokenTypeControl && token_types[id] != kTokenTypeUserDefined) continue;
    added_tokens_decoder[std::to_string(id)] = {
        {"content", tokens[id]}, {"lstrip", false},      {"normalized", false},
        {"rstrip", false},       {"single_word", false}, {"special", token_types[id] == kTokenTypeControl}};
  }
  config["added_tokens_decoder"] = std::move(added_tokens_decoder);
  const auto set_token = [&](const char* config_key, const char* gguf_key) {
    const std::string text = token_or_empty(tokens, gguf, gguf_key);
    config[config_key] = text.empty() ? nlohmann::json(nullptr) : nlohmann::json(text);
  };
  set_token("bos_token", "tokenizer.ggml.bos_token_id");
  set_token("eos_token", "tokenizer.ggml.eos_token_id");
  set_token("pad_token", "tokenizer.ggml.padding_token_id");
  set_token("unk_token", "tokenizer.ggml.unknown_token_id");
  // llama.cpp adds BOS to SentencePiece vocabularies unless the file says otherwise.
  auto model_name = gguf.get_string("tokenizer.ggml.model");
  auto add_bos = gguf.get_bool("tokenizer.ggml.add_bos_token");
  config["add_bos_token"] = add_bos.is_ok() ? *add_bos : (model_name.is_ok() && *model_name == "llama");
  config["add_prefix_space"] = false;
  config["clean_up_tokenization_spaces"] = false;
  config["model_max_length"] = 131072;
  auto arch = gguf.get_string("general.architecture");
  if (arch.is_ok()) {
    auto context = gguf.get_int(*arch + ".context_length");
    if (context.is_ok()) config["model_max_length"] = *context;
  }
  config["tokenizer_class"] = "PreTrainedTokenizerFast";
  if (gguf.has("tokenizer.chat_template")) {
    CROSSPOINT_ASSIGN_OR_RETURN(std::string chat_template, gguf.get_string("tokenizer.chat_template"));
    config["chat_template"] = chat_template;
  }
  return config;
}

}  // namespace crosspoint
