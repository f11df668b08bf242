// Streaming detokenisation never emits a broken character, and what it emits in total is
// decode() of all ids.
#include <gtest/gtest.h>

#include "tokenizer/utf8.h"
#include "tokenizer_test_util.h"

namespace crosspoint {
namespace {

std::string stream(const Tokenizer& tokenizer, const std::vector<int32_t>& ids, bool skip_special,
                   std::vector<std::string>* pieces) {
  IncrementalDecoder decoder(tokenizer, skip_special);
  std::string all;
  for (int32_t id : ids) {
    std::string piece = decoder.push(id);
    EXPECT_TRUE(is_valid_utf8(piece));
    if (pieces) pieces->push_back(piece);
    all += piece;
  }
  all += decoder.flush();
  return all;
}

class IncrementalDecoderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    CROSSPOINT_REQUIRE_ASSET(testing::qwen_tokenizer_dir() + "/tokenizer.json");
    tokenizer_ = testing::load_qwen();
    ASSERT_NE(tokenizer_, nullptr);
  }
  // The single-byte token of each byte of text: every multi-byte character split apart.
  std::vector<int32_t> byte_tokens(const std::string& text) {
    std::vector<int32_t> ids;
    for (char c : text) {
      for (int32_t id = 0; id < 256 + 256; ++id) {
        if (tokenizer_->token_bytes(id) == std::string(1, c)) {
          ids.push_back(id);
          break;
        }
      }
    }
    EXPECT_EQ(ids.size(), text.size());
    return ids;
  }
  const Tokenizer* tokenizer_ = nullptr;
};

TEST_F(IncrementalDecoderTest, HoldsBackSplitCharacters) {
  const std::string text = "한국어 🙂 👨‍👩‍👧 ok";
  const auto ids = byte_tokens(text);
  std::vector<std::string> pieces;
  EXPECT_EQ(stream(*tokenizer_, ids, false, &pieces), text);
  // The first byte of 한 alone shows nothing; the third completes it.
  ASSERT_GE(pieces.size(), 3u);
  EXPECT_EQ(pieces[0], "");
  EXPECT_EQ(pieces[1], "");
  EXPECT_EQ(pieces[2], "한");
}

TEST_F(IncrementalDecoderTest, ConcatenationEqualsDecodeOnCorpus) {
  const auto fixture = testing::load_fixture("qwen2.5.json");
  for (const auto& c : fixture["cases"]) {
    const auto ids = c["ids"].get<std::vector<int32_t>>();
    EXPECT_EQ(stream(*tokenizer_, ids, false, nullptr), tokenizer_->decode(ids, false)) << c["name"];
    EXPECT_EQ(stream(*tokenizer_, ids, true, nullptr), tokenizer_->decode(ids, true)) << c["name"];
  }
  for (const auto& c : fixture["decode_cases"]) {
    const auto ids = c["ids"].get<std::vector<int32_t>>();
    EXPECT_EQ(stream(*tokenizer_, ids, false, nullptr), c["text"].get<std::string>());
  }
}

TEST_F(IncrementalDecoderTest, InvalidBytesBecomeReplacementOnceFinal) {
  // 0x80 alone can never become valid: it is replaced at once, not held back.
  const auto ids = byte_tokens(std::string("a\x80", 2));
  IncrementalDecoder decoder(*tokenizer_);
  EXPECT_EQ(decoder.push(ids[0]), "a");
  EXPECT_EQ(decoder.push(ids[1]), "\xEF\xBF\xBD");
  EXPECT_EQ(decoder.flush(), "");
  // An unfinished character at the end is replaced by flush().
  const auto cut = byte_tokens("\xF0\x9F\x99");
  IncrementalDecoder decoder2(*tokenizer_);
  for (int32_t id : cut) EXPECT_EQ(decoder2.push(id), "");
  EXPECT_EQ(decoder2.flush(), "\xEF\xBF\xBD");
}

}  // namespace
}  // namespace crosspoint
