// Our ids and decoded text against fixtures made by Hugging Face `tokenizers` (and, for
// SmolLM2, llama.cpp) on the real Qwen2.5 and SmolLM2 vocabularies; see
// tests/fixtures/tokenizer/make_fixtures.py.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <thread>

#include "tokenizer/hf_tokenizer_writer.h"
#include "tokenizer_test_util.h"

namespace crosspoint {
namespace {

using testing::case_input;
using testing::load_fixture;

void expect_matches_fixture(const Tokenizer& tokenizer, const nlohmann::json& fixture, bool check_llama_cpp) {
  for (const auto& c : fixture["cases"]) {
    SCOPED_TRACE(c["name"].get<std::string>());
    const std::string input = case_input(c);
    const auto ids = tokenizer.encode(input, /*parse_special=*/true);
    EXPECT_EQ(ids, c["ids"].get<std::vector<int32_t>>());
    EXPECT_EQ(tokenizer.encode(input, /*parse_special=*/false), c["ids_no_special"].get<std::vector<int32_t>>());
    if (check_llama_cpp && c.contains("ids_llama_cpp")) {
      EXPECT_EQ(ids, c["ids_llama_cpp"].get<std::vector<int32_t>>()) << "llama.cpp";
    }
    const auto expected_ids = c["ids"].get<std::vector<int32_t>>();
    EXPECT_EQ(tokenizer.decode(expected_ids, false), c["decoded"].get<std::string>());
    EXPECT_EQ(tokenizer.decode(expected_ids, true), c["decoded_skip_special"].get<std::string>());
  }
  for (const auto& c : fixture["decode_cases"]) {
    const auto ids = c["ids"].get<std::vector<int32_t>>();
    EXPECT_EQ(tokenizer.decode(ids), c["text"].get<std::string>()) << c["ids"].dump();
  }
}

TEST(Qwen25Conformance, MatchesHuggingFaceTokenizers) {
  CROSSPOINT_REQUIRE_ASSET(testing::qwen_tokenizer_dir() + "/tokenizer.json");
  auto tokenizer = testing::load_qwen();
  ASSERT_NE(tokenizer, nullptr);
  expect_matches_fixture(*tokenizer, load_fixture("qwen2.5.json"), false);
}

TEST(Qwen25Conformance, KnownIdsAndSpecialTokens) {
  CROSSPOINT_REQUIRE_ASSET(testing::qwen_tokenizer_dir() + "/tokenizer.json");
  auto tokenizer = testing::load_qwen();
  ASSERT_NE(tokenizer, nullptr);
  EXPECT_EQ(tokenizer->encode("Hello"), (std::vector<int32_t>{9707}));
  EXPECT_EQ(tokenizer->encode(" world"), (std::vector<int32_t>{1879}));
  EXPECT_EQ(tokenizer->token_id("<|endoftext|>"), 151643);
  EXPECT_EQ(tokenizer->token_id("<|im_start|>"), 151644);
  EXPECT_EQ(tokenizer->token_id("<|im_end|>"), 151645);
  EXPECT_EQ(tokenizer->token_id("<|file_sep|>"), 151664);
  EXPECT_EQ(tokenizer->vocab_size(), 151665);
  EXPECT_TRUE(tokenizer->is_special(151645));
  EXPECT_FALSE(tokenizer->is_special(151657));  // <tool_call> is an added, non-special token
  EXPECT_FALSE(tokenizer->bos_token_id().has_value());
  EXPECT_EQ(tokenizer->eos_token_ids(), (std::vector<int32_t>{151645, 151643}));
}

TEST(Qwen25Conformance, ConcurrentEncodingSharesTheWordCacheSafely) {
  CROSSPOINT_REQUIRE_ASSET(testing::qwen_tokenizer_dir() + "/tokenizer.json");
  const Tokenizer* tokenizer = testing::load_qwen();
  ASSERT_NE(tokenizer, nullptr);
  const auto fixture = load_fixture("qwen2.5.json");
  std::vector<std::thread> threads;
  std::vector<int> num_mismatches(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 3; ++round)
        for (const auto& c : fixture["cases"])
          if (tokenizer->encode(case_input(c)) != c["ids"].get<std::vector<int32_t>>()) ++num_mismatches[t];
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(num_mismatches, std::vector<int>(4, 0));
}

TEST(SmolLM2Conformance, FromGgufMatchesHuggingFaceAndLlamaCpp) {
  CROSSPOINT_REQUIRE_ASSET(testing::smollm2_gguf_path());
  auto tokenizer = testing::load_smollm2_from_gguf();
  ASSERT_NE(tokenizer, nullptr);
  expect_matches_fixture(*tokenizer, load_fixture("smollm2.json"), true);
  EXPECT_EQ(tokenizer->bos_token_id(), 1);
  EXPECT_EQ(tokenizer->eos_token_ids(), (std::vector<int32_t>{2, 0}));  // <|im_end|>, <|endoftext|>
}

TEST(SmolLM2Conformance, WrittenHfFilesLoadAndEncodeTheSame) {
  CROSSPOINT_REQUIRE_ASSET(testing::smollm2_gguf_path());
  auto gguf = GgufFile::open(testing::smollm2_gguf_path());
  ASSERT_TRUE(gguf.is_ok()) << gguf.status().to_string();
  const auto dir = std::filesystem::temp_directory_path() / ("crosspoint_tokenizer_test_" + std::to_string(getpid()));
  ASSERT_TRUE(write_hf_tokenizer_files(*gguf, dir.string()).is_ok());
  auto from_files = Tokenizer::from_model_dir(dir.string());
  ASSERT_TRUE(from_files.is_ok()) << from_files.status().to_string();
  expect_matches_fixture(**from_files, load_fixture("smollm2.json"), true);
  EXPECT_EQ((*from_files)->bos_token_id(), 1);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace crosspoint
