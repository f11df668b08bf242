#include "tokenizer/bpe_tokenizer.h"

#include <fmt/format.h>

#include <algorithm>

#include "tokenizer/byte_level.h"
#include "tokenizer/utf8.h"

namespace crosspoint {

namespace {

// tokenizer_config.json writes special tokens as "text" or {"content": "text", ...}.
std::optional<std::string> token_text(const nlohmann::json& config, const char* key) {
  if (!config.is_object() || !config.contains(key)) return std::nullopt;
  const auto& value = config[key];
  if (value.is_string()) return value.get<std::string>();
  if (value.is_object() && value.contains("content") && value["content"].is_string())
    return value["content"].get<std::string>();
  return std::nullopt;
}

// What HF's ByteLevel decoder makes of one token: the byte of each character when all of
// them are in the byte-level alphabet, else the token's own UTF-8.
std::string decoded_token_bytes(const std::string& token) {
  if (auto bytes = byte_level_to_bytes(token)) return std::move(*bytes);
  return token;
}

Status check_model_options(const nlohmann::json& model, const std::string& where) {
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    if (model.contains(key) && model[key].is_string() && !model[key].get<std::string>().empty())
      return unsupported(fmt::format("{}: model.{} is set (not supported)", where, key));
  }
  if (model.contains("dropout") && !model["dropout"].is_null() && model["dropout"].is_number() &&
      model["dropout"].get<double>() > 0.0)
    return unsupported(fmt::format("{}: model.dropout is set (encoding would be random)", where));
  return Status::ok();
}

Result<std::vector<std::pair<std::string, std::string>>> parse_merges(const nlohmann::json& merges,
                                                                      const std::string& where) {
  std::vector<std::pair<std::string, std::string>> out;
  if (!merges.is_array()) return corrupt(fmt::format("{}: model.merges is not an array", where));
  out.reserve(merges.size());
  for (size_t i = 0; i < merges.size(); ++i) {
    const auto& merge = merges[i];
    if (merge.is_string()) {  // "left right"
      const std::string text = merge.get<std::string>();
      const size_t space = text.find(' ');
      if (space == std::string::npos || text.find(' ', space + 1) != std::string::npos)
        return corrupt(
            fmt::format("{}: model.merges[{}] \"{}\" is not two tokens separated by a space", where, i, text));
      out.emplace_back(text.substr(0, space), text.substr(space + 1));
    } else if (merge.is_array() && merge.size() == 2 && merge[0].is_string() && merge[1].is_string()) {
      out.emplace_back(merge[0].get<std::string>(), merge[1].get<std::string>());
    } else {
      return corrupt(fmt::format("{}: model.merges[{}] is neither \"a b\" nor [\"a\", \"b\"]", where, i));
    }
  }
  return out;
}

bool decoder_is_byte_level(const nlohmann::json& decoder) {
  if (!decoder.is_object()) return false;
  const std::string type = decoder.value("type", "");
  if (type == "ByteLevel") return true;
  if (type == "Sequence" && decoder.contains("decoders") && decoder["decoders"].is_array()) {
    const auto& items = decoder["decoders"];
    return !items.empty() && std::all_of(items.begin(), items.end(), decoder_is_byte_level);
  }
  return false;
}

}  // namespace

namespace {

// The special tokens a post-processor puts before and after one sequence: TemplateProcessing's
// "single" SpecialToken pieces around its Sequence piece (ids from its special_tokens map), the
// BERT / RoBERTa processors' cls and sep, a Sequence of processors in order; ByteLevel and
// anything else none. Unknown names or malformed entries are an error naming them.
Status post_processor_special_tokens(const nlohmann::json& processor, const std::string& where,
                                     std::vector<int32_t>* prefix, std::vector<int32_t>* suffix) {
  if (!processor.is_object()) return Status::ok();
  const auto type = processor.find("type");
  if (type == processor.end() || !type->is_string()) return Status::ok();
  if (*type == "TemplateProcessing") {
    const auto single = processor.find("single");
    if (single == processor.end() || !single->is_array()) return Status::ok();
    const nlohmann::json specials = processor.value("special_tokens", nlohmann::json::object());
    bool after = false;
    for (const auto& piece : *single) {
      if (!piece.is_object()) continue;
      if (piece.contains("Sequence")) {
        after = true;
        continue;
      }
      const auto special = piece.find("SpecialToken");
      if (special == piece.end()) continue;
      const std::string name = special->value("id", "");
      const auto entry = specials.find(name);
      if (entry == specials.end() || !entry->contains("ids") || !(*entry)["ids"].is_array())
        return corrupt(fmt::format("{}: post_processor names special token '{}' without its ids", where, name));
      for (const auto& id : (*entry)["ids"]) {
        if (!id.is_number_integer()) return corrupt(fmt::format("{}: special token '{}' has a bad id", where, name));
        (after ? suffix : prefix)->push_back(id.get<int32_t>());
      }
    }
    return Status::ok();
  }
  if (*type == "BertProcessing" || *type == "RobertaProcessing") {
    auto id_of = [&](const char* key, std::vector<int32_t>* out) -> Status {
      const auto pair = processor.find(key);
      if (pair == processor.end() || !pair->is_array() || pair->size() != 2 || !(*pair)[1].is_number_integer())
        return corrupt(
            fmt::format("{}: {} post_processor without its '{}' token", where, type->get<std::string>(), key));
      out->push_back((*pair)[1].get<int32_t>());
      return Status::ok();
    };
    CROSSPOINT_RETURN_IF_ERROR(id_of("cls", prefix));
    return id_of("sep", suffix);
  }
  if (*type == "Sequence") {
    const auto list = processor.find("processors");
    if (list != processor.end() && list->is_array())
      for (const auto& p : *list) CROSSPOINT_RETURN_IF_ERROR(post_processor_special_tokens(p, where, prefix, suffix));
  }
  return Status::ok();
}

}  // namespace

Result<std::unique_ptr<BpeTokenizer>> BpeTokenizer::create(const nlohmann::json& tokenizer_json,
                                                           const nlohmann::json& config, const std::string& where) {
  if (!tokenizer_json.is_object()) return corrupt(fmt::format("{}: not a JSON object", where));
  if (!tokenizer_json.contains("model") || !tokenizer_json["model"].is_object())
    return corrupt(fmt::format("{}: no \"model\" object", where));
  const auto& model = tokenizer_json["model"];
  const std::string model_type = model.value("type", "BPE");
  if (model_type != "BPE")
    return unsupported(fmt::format("{}: model.type \"{}\" (only BPE is supported)", where, model_type));
  CROSSPOINT_RETURN_IF_ERROR(check_model_options(model, where));
  if (!model.contains("vocab") || !model["vocab"].is_object())
    return corrupt(fmt::format("{}: model.vocab is missing or not an object", where));
  if (!model.contains("merges")) return corrupt(fmt::format("{}: model.merges is missing", where));

  std::unique_ptr<BpeTokenizer> tokenizer(new BpeTokenizer());
  int32_t max_id = -1;
  for (const auto& [text, id_value] : model["vocab"].items()) {
    if (!id_value.is_number_integer() || id_value.get<int64_t>() < 0 || id_value.get<int64_t>() > (1 << 30))
      return corrupt(fmt::format("{}: model.vocab[\"{}\"] is not a valid id", where, text));
    const int32_t id = id_value.get<int32_t>();
    tokenizer->id_by_token_.emplace(text, id);
    max_id = std::max(max_id, id);
  }
  CROSSPOINT_ASSIGN_OR_RETURN(auto merges, parse_merges(model["merges"], where));
  const bool ignore_merges = model.value("ignore_merges", false);
  // A decoder that is not ByteLevel means a SentencePiece-style file: token texts are the
  // characters themselves, spaces are "▁".
  const bool byte_level = decoder_is_byte_level(tokenizer_json.value("decoder", nlohmann::json()));
  if (byte_level) {
    if (model.value("byte_fallback", false))
      return unsupported(fmt::format("{}: model.byte_fallback is true with a ByteLevel decoder", where));
    CROSSPOINT_ASSIGN_OR_RETURN(BpeModel bpe, BpeModel::create(tokenizer->id_by_token_, merges, ignore_merges, where));
    tokenizer->model_.emplace(std::move(bpe));
  } else {
    int32_t unk_id = -1;
    if (model.contains("unk_token") && model["unk_token"].is_string()) {
      const auto it = tokenizer->id_by_token_.find(model["unk_token"].get<std::string>());
      if (it == tokenizer->id_by_token_.end())
        return corrupt(fmt::format("{}: model.unk_token \"{}\" is not in the vocabulary", where,
                                   model["unk_token"].get<std::string>()));
      unk_id = it->second;
    }
    CROSSPOINT_ASSIGN_OR_RETURN(
        BpeModel bpe,
        BpeModel::create_char_level(tokenizer->id_by_token_, merges, ignore_merges, model.value("byte_fallback", false),
                                    unk_id, model.value("fuse_unk", false), where));
    tokenizer->model_.emplace(std::move(bpe));
  }

  CROSSPOINT_ASSIGN_OR_RETURN(tokenizer->normalizer_,
                              Normalizer::from_json(tokenizer_json.value("normalizer", nlohmann::json()), where));
  if (byte_level) {
    bool has_byte_level = false;
    CROSSPOINT_ASSIGN_OR_RETURN(
        tokenizer->pre_tokenizer_,
        PreTokenizer::from_json(tokenizer_json.value("pre_tokenizer", nlohmann::json()), where, &has_byte_level));
    if (!has_byte_level)
      return unsupported(fmt::format("{}: pre_tokenizer has no ByteLevel step but the decoder is ByteLevel", where));
  } else {
    CROSSPOINT_RETURN_IF_ERROR(tokenizer->load_piece_parts(tokenizer_json, where));
  }

  CROSSPOINT_RETURN_IF_ERROR(tokenizer->load_added_tokens(tokenizer_json, where));
  for (const auto& [text, id] : tokenizer->id_by_token_) max_id = std::max(max_id, id);
  for (const auto& token : tokenizer->added_vocabulary_.tokens()) max_id = std::max(max_id, token.id);
  // Ids are a dense table in every real tokenizer; a far larger id would only make it huge.
  const int64_t num_entries = static_cast<int64_t>(tokenizer->id_by_token_.size());
  if (max_id >= 2 * num_entries + 65536)
    return corrupt(
        fmt::format("{}: token id {} is far beyond the vocabulary's {} entries", where, max_id, num_entries));

  tokenizer->token_bytes_.assign(static_cast<size_t>(max_id + 1), std::string());
  if (tokenizer->piece_decoder_) {
    // Each token's own text and what it decodes to in the middle of a text (a <0xNN>
    // token: its byte).
    tokenizer->token_text_.assign(static_cast<size_t>(max_id + 1), std::string());
    for (const auto& [text, id] : tokenizer->id_by_token_) tokenizer->token_text_[id] = text;
    for (const auto& token : tokenizer->added_vocabulary_.tokens()) tokenizer->token_text_[token.id] = token.content;
    for (size_t id = 0; id < tokenizer->token_text_.size(); ++id) {
      const std::string& text = tokenizer->token_text_[id];
      const auto byte = fallback_byte(text);
      tokenizer->token_bytes_[id] = byte && tokenizer->piece_decoder_->has_byte_fallback()
                                        ? std::string(1, static_cast<char>(*byte))
                                        : tokenizer->piece_decoder_->decode({text}, /*first=*/false);
    }
  } else {
    for (const auto& [text, id] : tokenizer->id_by_token_) tokenizer->token_bytes_[id] = decoded_token_bytes(text);
    for (const auto& token : tokenizer->added_vocabulary_.tokens())
      tokenizer->token_bytes_[token.id] = decoded_token_bytes(token.content);
  }
  tokenizer->resolve_bos_eos(config);
  CROSSPOINT_RETURN_IF_ERROR(post_processor_special_tokens(tokenizer_json.value("post_processor", nlohmann::json()),
                                                           where, &tokenizer->special_prefix_,
                                                           &tokenizer->special_suffix_));
  return tokenizer;
}

Status BpeTokenizer::load_piece_parts(const nlohmann::json& tokenizer_json, const std::string& where) {
  const nlohmann::json pre_tokenizer = tokenizer_json.value("pre_tokenizer", nlohmann::json());
  if (pre_tokenizer.is_object() && pre_tokenizer.value("type", "") == "Metaspace") {
    CROSSPOINT_ASSIGN_OR_RETURN(auto metaspace, MetaspacePreTokenizer::from_json(pre_tokenizer, where));
    metaspace_.emplace(std::move(metaspace));
  } else if (!pre_tokenizer.is_null()) {
    return unsupported(fmt::format("{}: pre_tokenizer {} with a non-ByteLevel decoder (supported: Metaspace or null)",
                                   where, pre_tokenizer.value("type", "?")));
  }
  CROSSPOINT_ASSIGN_OR_RETURN(auto decoder,
                              PieceDecoder::from_json(tokenizer_json.value("decoder", nlohmann::json()), where));
  piece_decoder_.emplace(std::move(decoder));
  return Status::ok();
}

Status BpeTokenizer::load_added_tokens(const nlohmann::json& tokenizer_json, const std::string& where) {
  if (!tokenizer_json.contains("added_tokens") || tokenizer_json["added_tokens"].is_null()) return Status::ok();
  const auto& list = tokenizer_json["added_tokens"];
  if (!list.is_array()) return corrupt(fmt::format("{}: added_tokens is not an array", where));
  for (size_t i = 0; i < list.size(); ++i) {
    const auto& entry = list[i];
    if (!entry.is_object() || !entry.contains("id") || !entry["id"].is_number_integer() || !entry.contains("content") ||
        !entry["content"].is_string() || entry["id"].get<int64_t>() < 0 || entry["id"].get<int64_t>() > (1 << 30))
      return corrupt(fmt::format("{}: added_tokens[{}] needs an integer \"id\" and a string \"content\"", where, i));
    if (entry.value("single_word", false))
      return unsupported(fmt::format("{}: added_tokens[{}] has single_word set", where, i));
    if (entry["content"].get_ref<const std::string&>().empty())
      return corrupt(fmt::format("{}: added_tokens[{}] has empty content", where, i));
    AddedToken token;
    token.id = entry["id"].get<int32_t>();
    token.content = entry["content"].get<std::string>();
    token.special = entry.value("special", false);
    token.lstrip = entry.value("lstrip", false);
    token.rstrip = entry.value("rstrip", false);
    if (token.special) special_ids_.insert(token.id);
    id_by_token_[token.content] = token.id;
    added_vocabulary_.add(std::move(token));
  }
  return Status::ok();
}

void BpeTokenizer::resolve_bos_eos(const nlohmann::json& config) {
  if (auto bos = token_text(config, "bos_token")) bos_token_id_ = token_id(*bos);
  const auto add_eos = [&](const std::string& text) {
    const auto id = token_id(text);
    if (id && std::find(eos_token_ids_.begin(), eos_token_ids_.end(), *id) == eos_token_ids_.end())
      eos_token_ids_.push_back(*id);
  };
  if (auto eos = token_text(config, "eos_token")) add_eos(*eos);
  // ChatML models end a turn with <|im_end|> and a document with <|endoftext|>; both stop
  // generation (Qwen2.5-Instruct's generation_config lists both).
  add_eos("<|im_end|>");
  add_eos("<|endoftext|>");
}

std::vector<int32_t> BpeTokenizer::encode(std::string_view text, bool parse_special) const {
  // Invalid UTF-8 is replaced by U+FFFD first: the ids are those HF gives for
  // bytes.decode("utf-8", errors="replace"), since a Python str cannot hold invalid bytes.
  const std::string valid = replace_invalid_utf8(text);
  std::vector<TextSegment> segments;
  added_vocabulary_.split(valid, parse_special, segments);
  std::vector<int32_t> ids;
  ids.reserve(valid.size() / 3 + 4);
  std::vector<std::string> words;
  for (const TextSegment& segment : segments) {
    if (segment.added_token_id >= 0) {
      ids.push_back(segment.added_token_id);
      continue;
    }
    words.clear();
    if (piece_decoder_) {
      // HF's Metaspace "first" prepends only to the piece at the start of the input.
      const bool at_start = segment.text.data() == valid.data();
      std::string normalized = normalizer_.apply(segment.text);
      if (metaspace_) metaspace_->split(normalized, at_start, words);
      else if (!normalized.empty()) words.push_back(std::move(normalized));
    } else if (normalizer_.is_identity()) {
      pre_tokenizer_.split(segment.text, words);
    } else {
      pre_tokenizer_.split(normalizer_.apply(segment.text), words);
    }
    for (const std::string& word : words) model_->encode_word(word, ids);
  }
  return ids;
}

std::vector<AddedTokenPiece> BpeTokenizer::split_at_added_tokens(std::string_view text) const {
  const std::string valid = replace_invalid_utf8(text);
  std::vector<TextSegment> segments;
  added_vocabulary_.split(valid, /*match_special=*/true, segments);
  std::vector<AddedTokenPiece> pieces;
  pieces.reserve(segments.size());
  for (const TextSegment& segment : segments) pieces.push_back({segment.added_token_id, std::string(segment.text)});
  return pieces;
}

std::string BpeTokenizer::decode(std::span<const int32_t> ids, bool skip_special) const {
  if (piece_decoder_) {
    std::vector<std::string> texts;
    texts.reserve(ids.size());
    for (int32_t id : ids) {
      if (id < 0 || id >= vocab_size()) continue;
      if (skip_special && special_ids_.count(id) != 0) continue;
      texts.push_back(token_text_[id]);
    }
    return piece_decoder_->decode(std::move(texts), /*first=*/true);
  }
  std::string bytes;
  for (int32_t id : ids) {
    if (id < 0 || id >= vocab_size()) continue;  // unknown ids are dropped, as HF does
    if (skip_special && special_ids_.count(id) != 0) continue;
    bytes += token_bytes_[id];
  }
  return replace_invalid_utf8(bytes);
}

bool BpeTokenizer::ends_piece(int32_t id) const {
  if (!piece_decoder_ || !piece_decoder_->has_byte_fallback() || id < 0 || id >= vocab_size()) return true;
  return !fallback_byte(token_text_[id]).has_value();
}

std::string BpeTokenizer::decode_piece(std::span<const int32_t> ids, bool first) const {
  if (!piece_decoder_) return decode(ids);
  std::vector<std::string> texts;
  for (int32_t id : ids)
    if (id >= 0 && id < vocab_size()) texts.push_back(token_text_[id]);
  return piece_decoder_->decode(std::move(texts), first);
}

std::string BpeTokenizer::token_bytes(int32_t id) const {
  if (id < 0 || id >= vocab_size()) return {};
  return token_bytes_[id];
}

std::optional<int32_t> BpeTokenizer::token_id(std::string_view token) const {
  const auto it = id_by_token_.find(std::string(token));
  if (it == id_by_token_.end()) return std::nullopt;
  return it->second;
}

bool BpeTokenizer::is_special(int32_t id) const { return special_ids_.count(id) != 0; }

std::vector<int32_t> BpeTokenizer::with_special_tokens(std::vector<int32_t> ids) const {
  ids.insert(ids.begin(), special_prefix_.begin(), special_prefix_.end());
  ids.insert(ids.end(), special_suffix_.begin(), special_suffix_.end());
  return ids;
}

}  // namespace crosspoint
