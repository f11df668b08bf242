// SentencePiece-style BPE with byte fallback (Llama 2, Mistral, TinyLlama layouts) against
// ids and texts Hugging Face `tokenizers` gave for two small tokenizers trained in those
// layouts; see tests/fixtures/tokenizer/make_byte_fallback_fixtures.py.
#include <gtest/gtest.h>

#include <functional>
#include <random>

#include "tokenizer/bpe_tokenizer.h"

#include "tokenizer_test_util.h"

namespace crosspoint {
namespace {

using testing::case_input;
using testing::load_fixture;

std::unique_ptr<Tokenizer> load(const std::string& file) {
  auto result = Tokenizer::from_tokenizer_json(std::string(CROSSPOINT_FIXTURES_DIR) + "/tokenizer/" + file);
  EXPECT_TRUE(result.is_ok()) << result.status().to_string();
  return result.is_ok() ? std::move(result).value() : nullptr;
}

std::string stream(const Tokenizer& tokenizer, const std::vector<int32_t>& ids, bool skip_special) {
  IncrementalDecoder decoder(tokenizer, skip_special);
  std::string text;
  for (int32_t id : ids) text += decoder.push(id);
  return text + decoder.flush();
}

void expect_matches_fixture(const Tokenizer* tokenizer, const nlohmann::json& fixture) {
  ASSERT_NE(tokenizer, nullptr);
  for (const auto& c : fixture["cases"]) {
    SCOPED_TRACE(c["name"].get<std::string>());
    const std::string input = case_input(c);
    const auto ids = c["ids"].get<std::vector<int32_t>>();
    EXPECT_EQ(tokenizer->encode(input), ids);
    EXPECT_EQ(tokenizer->with_special_tokens(tokenizer->encode(input)),
              c["ids_with_special"].get<std::vector<int32_t>>());
    EXPECT_EQ(tokenizer->decode(ids, false), c["decoded"].get<std::string>());
    EXPECT_EQ(tokenizer->decode(ids, true), c["decoded_skip_special"].get<std::string>());
    EXPECT_EQ(stream(*tokenizer, ids, false), c["decoded"].get<std::string>()) << "incremental";
    EXPECT_EQ(stream(*tokenizer, ids, true), c["decoded_skip_special"].get<std::string>()) << "incremental";
  }
  for (const auto& c : fixture["decode_cases"]) {
    SCOPED_TRACE(c["ids"].dump());
    const auto ids = c["ids"].get<std::vector<int32_t>>();
    EXPECT_EQ(tokenizer->decode(ids, false), c["text"].get<std::string>());
    EXPECT_EQ(tokenizer->decode(ids, true), c["text_skip_special"].get<std::string>());
    EXPECT_EQ(stream(*tokenizer, ids, false), c["text"].get<std::string>()) << "incremental";
    EXPECT_EQ(stream(*tokenizer, ids, true), c["text_skip_special"].get<std::string>()) << "incremental";
  }
}

class ByteFallbackConformance : public ::testing::TestWithParam<const char*> {};

TEST_P(ByteFallbackConformance, MatchesHuggingFaceTokenizers) {
  const auto fixture = load_fixture("byte_fallback.json")[GetParam()];
  auto tokenizer = load(fixture["tokenizer"].get<std::string>());
  expect_matches_fixture(tokenizer.get(), fixture);
}

// The fixture's variants: edits of the two files (another decoder or pre-tokenizer,
// ignore_merges, byte tokens taken out so that <unk> is used), made here as the script made
// them before asking HF.
TEST(ByteFallbackConformance, VariantsMatchHuggingFaceTokenizers) {
  const auto fixture = load_fixture("byte_fallback.json");
  ASSERT_GE(fixture["variants"].size(), 4u);
  for (const auto& variant : fixture["variants"]) {
    SCOPED_TRACE(variant["name"].get<std::string>());
    auto spec = load_fixture(variant["tokenizer"].get<std::string>());
    const auto set = variant.value("set", nlohmann::json::object());
    const auto set_model = variant.value("set_model", nlohmann::json::object());
    const auto remove_vocab = variant.value("remove_vocab", nlohmann::json::array());
    for (const auto& [key, value] : set.items()) spec[key] = value;
    for (const auto& [key, value] : set_model.items()) spec["model"][key] = value;
    for (const auto& token : remove_vocab) spec["model"]["vocab"].erase(token.get<std::string>());
    auto result = BpeTokenizer::create(spec, nlohmann::json(), variant["name"].get<std::string>());
    ASSERT_TRUE(result.is_ok()) << result.status().to_string();
    expect_matches_fixture(result.value().get(), variant);
  }
}

INSTANTIATE_TEST_SUITE_P(Layouts, ByteFallbackConformance, ::testing::Values("metaspace", "llama"));

TEST(ByteFallback, UnknownCharactersBecomeByteTokensAndStreamsHoldTheirRun) {
  auto tokenizer = load("byte_fallback_llama.tokenizer.json");
  ASSERT_NE(tokenizer, nullptr);
  const auto e4 = tokenizer->token_id("<0xE4>"), bd = tokenizer->token_id("<0xBD>"), a0 = tokenizer->token_id("<0xA0>");
  ASSERT_TRUE(e4 && bd && a0);
  const auto ids = tokenizer->encode("你");
  ASSERT_EQ(ids.size(), 4u);  // "▁" then the three bytes of 你
  EXPECT_EQ(std::vector<int32_t>(ids.begin() + 1, ids.end()), (std::vector<int32_t>{*e4, *bd, *a0}));
  EXPECT_EQ(tokenizer->token_bytes(*e4), "\xE4");
  EXPECT_EQ(tokenizer->bos_token_id(), std::nullopt);  // no tokenizer_config.json
  EXPECT_EQ(tokenizer->num_added_special_tokens(), 1);
  // A run of byte tokens is held until it ends, since a later byte can spoil all of it.
  IncrementalDecoder decoder(*tokenizer);
  EXPECT_EQ(decoder.push(*e4), "");
  EXPECT_EQ(decoder.push(*bd), "");
  EXPECT_EQ(decoder.flush(), "\xEF\xBF\xBD\xEF\xBF\xBD");
}

// The stream equals decode on random id sequences heavy in byte tokens (and specials).
TEST(ByteFallback, StreamEqualsDecodeOnRandomIds) {
  std::mt19937 rng(11);
  for (const char* file : {"byte_fallback_llama.tokenizer.json", "byte_fallback_metaspace.tokenizer.json"}) {
    auto tokenizer = load(file);
    ASSERT_NE(tokenizer, nullptr);
    for (int round = 0; round < 500; ++round) {
      std::vector<int32_t> ids(rng() % 16 + 1);
      for (int32_t& id : ids) id = static_cast<int32_t>(rng() % 2 == 0 ? rng() % tokenizer->vocab_size() : rng() % 259);
      for (bool skip : {false, true})
        ASSERT_EQ(stream(*tokenizer, ids, skip), tokenizer->decode(ids, skip)) << file << " " << skip;
    }
  }
}

TEST(ByteFallback, RefusesWhatItCannotDecodeExactly) {
  const std::vector<std::pair<const char*, std::function<void(nlohmann::json&)>>> cases = {
      {"stop > 0 after Fuse",
       [](nlohmann::json& j) {
         j["decoder"]["decoders"].push_back({{"type", "Strip"}, {"content", " "}, {"start", 0}, {"stop", 1}});
       }},
      {"decoder type \"CTC\"", [](nlohmann::json& j) { j["decoder"] = {{"type", "CTC"}}; }},
      {"pre_tokenizer Whitespace", [](nlohmann::json& j) { j["pre_tokenizer"] = {{"type", "Whitespace"}}; }},
      {"Regex pattern", [](nlohmann::json& j) { j["normalizer"]["normalizers"][1]["pattern"] = {{"Regex", " +"}}; }},
      {"prepend_scheme \"sometimes\"",
       [](nlohmann::json& j) {
         j["pre_tokenizer"] = {{"type", "Metaspace"}, {"replacement", "\u2581"}, {"prepend_scheme", "sometimes"}};
       }},
      {"model.unk_token", [](nlohmann::json& j) { j["model"]["unk_token"] = "<nope>"; }},
  };
  for (const auto& [expected, edit] : cases) {
    auto json = load_fixture("byte_fallback_llama.tokenizer.json");
    edit(json);
    auto result = BpeTokenizer::create(json, nlohmann::json(), "tokenizer.json");
    ASSERT_FALSE(result.is_ok()) << expected;
    EXPECT_NE(result.status().message().find(expected), std::string::npos) << result.status().to_string();
  }
}

}  // namespace
}  // namespace crosspoint
