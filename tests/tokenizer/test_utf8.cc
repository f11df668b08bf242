// UTF-8 replacement follows the maximal-subpart rule; expectations are what Python's
// bytes.decode("utf-8", "replace") (and Rust's from_utf8_lossy) return.
#include <gtest/gtest.h>

#include "tokenizer/byte_level.h"
#include "tokenizer/utf8.h"

namespace crosspoint {
namespace {

const std::string kFffd = "\xEF\xBF\xBD";

TEST(Utf8, ReplacesEachMaximalInvalidSubsequenceOnce) {
  EXPECT_EQ(replace_invalid_utf8("abc"), "abc");
  EXPECT_EQ(replace_invalid_utf8("a\x80"
                                 "b"),
            "a" + kFffd + "b");
  EXPECT_EQ(replace_invalid_utf8("\xE2\x82"
                                 "A"),
            kFffd + "A");                                                  // truncated 3-byte: one
  EXPECT_EQ(replace_invalid_utf8("\xF0\x9F\x98"), kFffd);                  // truncated at the end
  EXPECT_EQ(replace_invalid_utf8("\xED\xA0\x80"), kFffd + kFffd + kFffd);  // surrogate: three
  EXPECT_EQ(replace_invalid_utf8("\xC0\xAF"), kFffd + kFffd);              // overlong: two
  EXPECT_EQ(replace_invalid_utf8("\xF5\xFF"), kFffd + kFffd);
  EXPECT_EQ(replace_invalid_utf8("\xF4\x90\x80\x80"), kFffd + kFffd + kFffd + kFffd);  // > U+10FFFF
  EXPECT_EQ(replace_invalid_utf8("\xE0\x9F\x80"), kFffd + kFffd + kFffd);              // overlong 3-byte
  EXPECT_EQ(replace_invalid_utf8("\xF0\x9F\x99\x82"), "\xF0\x9F\x99\x82");             // valid emoji kept
}

TEST(Utf8, CompletePrefixHoldsBackOnlyAnUnfinishedLastCharacter) {
  EXPECT_EQ(utf8_complete_prefix_length("abc"), 3u);
  EXPECT_EQ(utf8_complete_prefix_length("ab\xED\x95"), 2u);      // first two bytes of 한
  EXPECT_EQ(utf8_complete_prefix_length("ab\xF0\x9F\x99"), 2u);  // three bytes of an emoji
  EXPECT_EQ(utf8_complete_prefix_length("ab\xF0\x9F\x99\x82"), 6u);
  EXPECT_EQ(utf8_complete_prefix_length("ab\x80"), 3u);  // invalid, not incomplete
  EXPECT_EQ(utf8_complete_prefix_length("ab\xC0"), 3u);  // C0 can never complete
  EXPECT_EQ(utf8_complete_prefix_length("\xE2\x82"
                                        "A"),
            3u);
}

TEST(Utf8, DecodesCodepoints) {
  const Utf8Char c = decode_utf8_char("\xED\x95\x9C", 0);
  EXPECT_EQ(c.status, Utf8Status::kValid);
  EXPECT_EQ(c.codepoint, 0xD55Cu);
  EXPECT_EQ(c.length, 3u);
  std::string out;
  for (uint32_t cp : {0x41u, 0xE9u, 0xD55Cu, 0x1F642u}) append_utf8(cp, out);
  EXPECT_EQ(out, "A\xC3\xA9\xED\x95\x9C\xF0\x9F\x99\x82");
  EXPECT_TRUE(is_valid_utf8(out));
}

TEST(ByteLevel, Gpt2AlphabetRoundTrips) {
  EXPECT_EQ(byte_level_char(' '), "\xC4\xA0");   // Ġ
  EXPECT_EQ(byte_level_char('\n'), "\xC4\x8A");  // Ċ
  EXPECT_EQ(byte_level_char('A'), "A");
  EXPECT_EQ(bytes_to_byte_level(" world"), "\xC4\xA0world");
  std::string all;
  for (int b = 0; b < 256; ++b) all.push_back(static_cast<char>(b));
  EXPECT_EQ(byte_level_to_bytes(bytes_to_byte_level(all)), all);
  EXPECT_FALSE(byte_level_to_bytes(" ").has_value());  // a raw space is not in the alphabet
}

}  // namespace
}  // namespace crosspoint
