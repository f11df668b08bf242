// The output length the bench counts when a server sends no usage: the tokenizer on the text as
// vLLM's fallback (tokenizer(text, add_special_tokens=False)), special-token text as one token.
#include <gtest/gtest.h>

#include "bench/output_tokens.h"
#include "bench_test_util.h"

namespace crosspoint::bench {
namespace {

TEST(OutputTokens, UsageWinsElseTheTokenizerCountsSpecialTextAsOneToken) {
  auto tokenizer = Tokenizer::from_model_dir(testing::fixture_path("tiny_tokenizer"));
  ASSERT_TRUE(tokenizer.is_ok()) << tokenizer.status().to_string();
  const Tokenizer& t = *tokenizer.value();
  const std::string text = "hello world";
  const int plain = count_output_tokens(t, text);
  ASSERT_GT(plain, 0);
  // A server that leaves its end token in the text: one more token, not its characters.
  EXPECT_EQ(count_output_tokens(t, text + "<|endoftext|>"), plain + 1);
  EXPECT_EQ(count_output_tokens(t, ""), 0);

  RequestRecord with_usage;
  with_usage.usage_completion_tokens = 7;
  with_usage.generated_text = text;
  resolve_output_len(with_usage, t);
  EXPECT_EQ(with_usage.output_len, 7);
  EXPECT_EQ(with_usage.output_len_source, "usage");
  RequestRecord without;
  without.generated_text = text + "<|endoftext|>";
  resolve_output_len(without, t);
  EXPECT_EQ(without.output_len, plain + 1);
  EXPECT_EQ(without.output_len_source, "tokenizer");
}

}  // namespace
}  // namespace crosspoint::bench
