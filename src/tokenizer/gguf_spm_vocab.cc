#include "tokenizer/gguf_spm_vocab.h"

#include <fmt/format.h>

#include <algorithm>
#include <tuple>
#include <unordered_map>

#include "formats/gguf.h"

namespace crosspoint {

namespace {

// llama.cpp token types (tokenizer.ggml.token_type).
constexpr int64_t kTokenTypeControl = 3;
constexpr int64_t kTokenTypeUserDefined = 4;
constexpr int64_t kTokenTypeUnused = 5;

constexpr const char* kSpace = "\xE2\x96\x81";  // U+2581, SentencePiece's space

bool is_utf8_continuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

nlohmann::json special_added_token(size_t id, const std::string& text, bool special) {
  return {{"id", id},        {"content", text},     {"single_word", false}, {"lstrip", false},
          {"rstrip", false}, {"normalized", false}, {"special", special}};
}

// TemplateProcessing around one sequence: bos before it, eos after it, where the GGUF asks.
nlohmann::json post_processor(const std::string& bos, int64_t bos_id, const std::string& eos, int64_t eos_id) {
  nlohmann::json single = nlohmann::json::array();
  nlohmann::json specials = nlohmann::json::object();
  const auto add = [&](const std::string& text, int64_t id) {
    single.push_back({{"SpecialToken", {{"id", text}, {"type_id", 0}}}});
    specials[text] = {{"id", text}, {"ids", {id}}, {"tokens", {text}}};
  };
  if (!bos.empty()) add(bos, bos_id);
  single.push_back({{"Sequence", {{"id", "A"}, {"type_id", 0}}}});
  if (!eos.empty()) add(eos, eos_id);
  return {{"type", "TemplateProcessing"}, {"single", single}, {"pair", nullptr}, {"special_tokens", specials}};
}

}  // namespace

std::vector<std::pair<std::string, std::string>> spm_merges_from_scores(const std::vector<std::string>& pieces,
                                                                        const std::vector<double>& scores) {
  std::unordered_map<std::string, size_t> id_of;
  for (size_t id = 0; id < pieces.size(); ++id) id_of.emplace(pieces[id], id);
  struct Merge {
    size_t left, right;
    double score;
  };
  std::vector<Merge> merges;
  std::vector<Merge> local;
  for (size_t id = 0; id < pieces.size(); ++id) {
    const std::string& piece = pieces[id];
    if (id_of.at(piece) != id) continue;  // a repeated piece is the first one
    local.clear();
    for (size_t cut = 1; cut < piece.size(); ++cut) {
      if (is_utf8_continuation(piece[cut])) continue;  // split between characters only
      const auto left = id_of.find(piece.substr(0, cut));
      const auto right = id_of.find(piece.substr(cut));
      if (left != id_of.end() && right != id_of.end()) local.push_back({left->second, right->second, scores[id]});
    }
    std::sort(local.begin(), local.end(),
              [](const Merge& a, const Merge& b) { return std::tie(a.left, a.right) < std::tie(b.left, b.right); });
    merges.insert(merges.end(), local.begin(), local.end());
  }
  std::stable_sort(merges.begin(), merges.end(), [](const Merge& a, const Merge& b) { return a.score > b.score; });
  std::vector<std::pair<std::string, std::string>> out;
  out.reserve(merges.size());
  for (const Merge& m : merges) out.emplace_back(pieces[m.left], pieces[m.right]);
  return out;
}

Result<nlohmann::json> spm_tokenizer_json_from_gguf(const GgufFile& gguf) {
  const std::string& where = gguf.path();
  CROSSPOINT_ASSIGN_OR_RETURN(std::vector<std::string> pieces, gguf.get_string_array("tokenizer.ggml.tokens"));
  if (!gguf.has("tokenizer.ggml.scores"))
    return corrupt(fmt::format("{}: a SentencePiece (\"llama\") vocabulary without tokenizer.ggml.scores", where));
  CROSSPOINT_ASSIGN_OR_RETURN(std::vector<double> scores, gguf.get_float_array("tokenizer.ggml.scores"));
  if (scores.size() != pieces.size())
    return corrupt(
        fmt::format("{}: tokenizer.ggml.scores has {} entries for {} tokens", where, scores.size(), pieces.size()));
  std::vector<int64_t> types(pieces.size(), 1);
  if (gguf.has("tokenizer.ggml.token_type")) {
    CROSSPOINT_ASSIGN_OR_RETURN(types, gguf.get_int_array("tokenizer.ggml.token_type"));
    if (types.size() != pieces.size())
      return corrupt(fmt::format("{}: tokenizer.ggml.token_type has {} entries for {} tokens", where, types.size(),
                                 pieces.size()));
  }
  const auto token_at = [&](const char* key) -> std::pair<std::string, int64_t> {
    auto id = gguf.get_int(key);
    if (!id.is_ok() || *id < 0 || *id >= static_cast<int64_t>(pieces.size())) return {"", -1};
    return {pieces[static_cast<size_t>(*id)], *id};
  };
  const auto flag = [&](const char* key, bool fallback) {
    auto value = gguf.get_bool(key);
    return value.is_ok() ? *value : fallback;
  };
  const auto [unk, unk_id] = token_at("tokenizer.ggml.unknown_token_id");

  nlohmann::json vocab = nlohmann::json::object();
  nlohmann::json added_tokens = nlohmann::json::array();
  for (size_t id = 0; id < pieces.size(); ++id) {
    if (types[id] == kTokenTypeUnused || vocab.contains(pieces[id])) continue;
    vocab[pieces[id]] = id;
    const bool control = types[id] == kTokenTypeControl || static_cast<int64_t>(id) == unk_id;
    if (control || types[id] == kTokenTypeUserDefined)
      added_tokens.push_back(special_added_token(id, pieces[id], control));
  }
  nlohmann::json merges = nlohmann::json::array();
  for (auto& [left, right] : spm_merges_from_scores(pieces, scores)) merges.push_back({left, right});

  // llama.cpp's SPM tokenizer: spaces become U+2581, one is put in front unless
  // tokenizer.ggml.add_space_prefix is false; the decoder undoes both.
  const bool space_prefix = flag("tokenizer.ggml.add_space_prefix", true);
  nlohmann::json normalizers = nlohmann::json::array();
  if (space_prefix) normalizers.push_back({{"type", "Prepend"}, {"prepend", kSpace}});
  normalizers.push_back({{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", kSpace}});
  nlohmann::json decoders = {{{"type", "Replace"}, {"pattern", {{"String", kSpace}}}, {"content", " "}},
                             {{"type", "ByteFallback"}},
                             {{"type", "Fuse"}}};
  if (space_prefix) decoders.push_back({{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}});

  const auto [bos, bos_id] = token_at("tokenizer.ggml.bos_token_id");
  const auto [eos, eos_id] = token_at("tokenizer.ggml.eos_token_id");
  nlohmann::json model = {{"type", "BPE"},
                          {"dropout", nullptr},
                          {"unk_token", unk.empty() ? nlohmann::json(nullptr) : nlohmann::json(unk)},
                          {"continuing_subword_prefix", nullptr},
                          {"end_of_word_suffix", nullptr},
                          {"fuse_unk", true},
                          {"byte_fallback", true},
                          {"ignore_merges", false},
                          {"vocab", std::move(vocab)},
                          {"merges", std::move(merges)}};
  return nlohmann::json{
      {"version", "1.0"},
      {"truncation", nullptr},
      {"padding", nullptr},
      {"added_tokens", std::move(added_tokens)},
      {"normalizer", {{"type", "Sequence"}, {"normalizers", std::move(normalizers)}}},
      {"pre_tokenizer", nullptr},
      {"post_processor", post_processor(flag("tokenizer.ggml.add_bos_token", true) ? bos : "", bos_id,
                                        flag("tokenizer.ggml.add_eos_token", false) ? eos : "", eos_id)},
      {"decoder", {{"type", "Sequence"}, {"decoders", std::move(decoders)}}},
      {"model", std::move(model)}};
}

}  // namespace crosspoint
