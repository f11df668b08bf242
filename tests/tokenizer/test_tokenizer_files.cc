// Loading tokenizer.json: both merge spellings, and a clear one-line error (naming the
// file and the field) for every kind of missing or corrupt input.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>

#include "tokenizer/byte_level.h"
#include "tokenizer_test_util.h"

namespace crosspoint {
namespace {

// A small byte-level BPE: the 256 byte tokens, then "ab", "abc", "Ġab".
nlohmann::json tiny_tokenizer_json(bool merges_as_pairs) {
  nlohmann::json vocab = nlohmann::json::object();
  for (int b = 0; b < 256; ++b) vocab[byte_level_char(static_cast<uint8_t>(b))] = b;
  vocab["ab"] = 256;
  vocab["abc"] = 257;
  vocab
      ["\xC4\xA0"
       "ab"] = 258;
  nlohmann::json merges = nlohmann::json::array();
  const std::vector<std::pair<std::string, std::string>> pairs = {{"a", "b"}, {"ab", "c"}, {"\xC4\xA0", "ab"}};
  for (const auto& [l, r] : pairs) {
    if (merges_as_pairs) {
      merges.push_back({l, r});
    } else {
      merges.push_back(l + " " + r);
    }
  }
  const nlohmann::json byte_level = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}};
  return {{"added_tokens", {{{"id", 259}, {"content", "<|end|>"}, {"special", true}}}},
          {"normalizer", nullptr},
          {"pre_tokenizer", byte_level},
          {"decoder", byte_level},
          {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", merges}}}};
}

class TokenizerFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("crosspoint_tok_files_" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string write(const std::string& text) {
    const auto path = dir_ / "tokenizer.json";
    std::ofstream(path) << text;
    return path.string();
  }
  Status load_error(const nlohmann::json& spec) {
    auto result = Tokenizer::from_tokenizer_json(write(spec.dump()));
    EXPECT_FALSE(result.is_ok());
    return result.is_ok() ? Status::ok() : result.status();
  }
  std::filesystem::path dir_;
};

TEST_F(TokenizerFilesTest, MergesAsStringsAndAsPairsAgree) {
  for (bool as_pairs : {false, true}) {
    auto tokenizer = Tokenizer::from_tokenizer_json(write(tiny_tokenizer_json(as_pairs).dump()));
    ASSERT_TRUE(tokenizer.is_ok()) << tokenizer.status().to_string();
    EXPECT_EQ((*tokenizer)->encode("abc ab<|end|>"), (std::vector<int32_t>{257, 258, 259}));
    EXPECT_EQ((*tokenizer)->encode("abc ab<|end|>", false).back(), '>');
    EXPECT_EQ((*tokenizer)->decode(std::vector<int32_t>{257, 258, 259}), "abc ab<|end|>");
    EXPECT_EQ((*tokenizer)->decode(std::vector<int32_t>{257, 259}, true), "abc");
    EXPECT_EQ((*tokenizer)->vocab_size(), 260);
  }
}

TEST_F(TokenizerFilesTest, MissingFilesAndDirectories) {
  auto missing = Tokenizer::from_tokenizer_json((dir_ / "nope.json").string());
  ASSERT_FALSE(missing.is_ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("nope.json"), std::string::npos);
  auto no_dir = Tokenizer::from_model_dir((dir_ / "no_such_model").string());
  ASSERT_FALSE(no_dir.is_ok());
  EXPECT_EQ(no_dir.status().code(), StatusCode::kNotFound);
  auto dir_without_file = Tokenizer::from_model_dir(dir_.string());
  ASSERT_FALSE(dir_without_file.is_ok());
  EXPECT_NE(dir_without_file.status().message().find("tokenizer.json"), std::string::npos);
}

TEST_F(TokenizerFilesTest, CorruptJson) {
  auto truncated = Tokenizer::from_tokenizer_json(write(tiny_tokenizer_json(false).dump().substr(0, 500)));
  ASSERT_FALSE(truncated.is_ok());
  EXPECT_EQ(truncated.status().code(), StatusCode::kCorrupt);
  EXPECT_NE(truncated.status().message().find("tokenizer.json"), std::string::npos);
}

TEST_F(TokenizerFilesTest, CorruptOrUnsupportedFieldsNameTheField) {
  struct Case {
    const char* expected_in_message;
    std::function<void(nlohmann::json&)> edit;
  };
  const std::vector<Case> cases = {
      {"model", [](nlohmann::json& j) { j.erase("model"); }},
      {"model.vocab", [](nlohmann::json& j) { j["model"]["vocab"] = 3; }},
      {"model.merges", [](nlohmann::json& j) { j["model"].erase("merges"); }},
      {"model.merges[1]", [](nlohmann::json& j) { j["model"]["merges"][1] = "abc"; }},
      {"not in the vocabulary", [](nlohmann::json& j) { j["model"]["merges"].push_back("x yz"); }},
      {"model.type", [](nlohmann::json& j) { j["model"]["type"] = "Unigram"; }},
      {"byte_fallback", [](nlohmann::json& j) { j["model"]["byte_fallback"] = true; }},
      {"pre_tokenizer type \"Whitespace\"", [](nlohmann::json& j) { j["pre_tokenizer"] = {{"type", "Whitespace"}}; }},
      {"regex does not compile",
       [](nlohmann::json& j) {
         j["pre_tokenizer"] = {
             {"type", "Sequence"},
             {"pretokenizers", {{{"type", "Split"}, {"pattern", {{"Regex", "(unclosed"}}}}, {{"type", "ByteLevel"}}}}};
       }},
      {"no ByteLevel", [](nlohmann::json& j) { j["pre_tokenizer"] = nullptr; }},
      {"decoder", [](nlohmann::json& j) { j["decoder"] = {{"type", "WordPiece"}}; }},
      {"normalizer type \"Lowercase\"", [](nlohmann::json& j) { j["normalizer"] = {{"type", "Lowercase"}}; }},
      {"added_tokens[0]", [](nlohmann::json& j) { j["added_tokens"][0].erase("id"); }},
      {"model.vocab[\"ab\"]", [](nlohmann::json& j) { j["model"]["vocab"]["ab"] = "x"; }},
      {"unexpected JSON type", [](nlohmann::json& j) { j["pre_tokenizer"]["use_regex"] = "yes"; }},
      {"unexpected JSON type", [](nlohmann::json& j) { j["model"]["type"] = 7; }},
      // Findings of hostile tokenizer.json files: an empty added token once wrote past the id
      // table; a huge id made the table itself huge; a non-boolean flag threw.
      {"added_tokens[1] has empty content",
       [](nlohmann::json& j) { j["added_tokens"].push_back({{"id", 300}, {"content", ""}, {"special", true}}); }},
      {"far beyond the vocabulary", [](nlohmann::json& j) { j["model"]["vocab"]["ab"] = 1 << 30; }},
      {"far beyond the vocabulary", [](nlohmann::json& j) { j["added_tokens"][0]["id"] = (1 << 30) - 1; }},
      {"unexpected JSON type", [](nlohmann::json& j) { j["added_tokens"][0]["special"] = "yes"; }},
  };
  for (const Case& c : cases) {
    nlohmann::json spec = tiny_tokenizer_json(false);
    c.edit(spec);
    const Status status = load_error(spec);
    EXPECT_NE(status.message().find(c.expected_in_message), std::string::npos) << status.to_string();
    EXPECT_NE(status.message().find("tokenizer.json"), std::string::npos) << status.to_string();
    EXPECT_EQ(status.to_string().find('\n'), std::string::npos);
  }
}

TEST(TokenizerGguf, CorruptGgufIsAnErrorNotACrash) {
  const auto path = std::filesystem::temp_directory_path() / ("crosspoint_bad_" + std::to_string(getpid()) + ".gguf");
  std::ofstream(path) << "GGUF\x03";
  auto gguf = GgufFile::open(path.string());
  EXPECT_FALSE(gguf.is_ok());
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace crosspoint
