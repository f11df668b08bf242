// The output processor alone (no sockets, no engine): engine updates for one choice against
// the fixture tokenizer, the text and logprobs each update adds, stop strings, the stop token,
// the finish reasons, errors, and the echoed prompt.
#include <gtest/gtest.h>

#include <cmath>

#include "server/output_processor.h"
#include "server/fixture_tokenizer.h"

namespace crosspoint {
namespace {

class OutputProcessorTest : public ::testing::Test {
 protected:
  static Choice make_choice(std::vector<std::string> stop = {}) {
    Choice c;
    c.decoder = std::make_unique<IncrementalDecoder>(testing::fixture_tokenizer());
    c.stop = std::make_unique<StopStringMatcher>(std::move(stop));
    return c;
  }
  // One update per token; the last one finished with `reason` (and carrying logprobs: -1 - i).
  static std::vector<RequestOutput> updates(const std::vector<int32_t>& ids, FinishReason reason) {
    std::vector<RequestOutput> out;
    for (size_t i = 0; i < ids.size(); ++i) {
      RequestOutput u;
      u.new_token_ids = {ids[i]};
      u.new_logprobs = {{{ids[i], -1.0 - static_cast<double>(i)}, {}}};
      u.num_output_tokens = static_cast<int32_t>(i + 1);
      u.finished = i + 1 == ids.size();
      if (u.finished) u.finish_reason = reason;
      out.push_back(u);
    }
    return out;
  }
};

TEST_F(OutputProcessorTest, UpdatesAddUpToTheDecodedText) {
  const std::vector<int32_t> ids = testing::fixture_tokenizer().encode("hello world, again", false);
  ASSERT_GE(ids.size(), 3u);
  Choice choice = make_choice();
  std::string text;
  size_t num_logprobs = 0;
  for (const RequestOutput& u : updates(ids, FinishReason::kLength)) {
    const ChoiceDelta d = process_output(choice, u, /*num_logprobs=*/0);
    EXPECT_FALSE(d.error);
    EXPECT_EQ(d.finished, u.finished);
    text += d.text;
    num_logprobs += d.logprobs.size();
  }
  EXPECT_EQ(text, testing::fixture_tokenizer().decode(ids));
  EXPECT_EQ(num_logprobs, ids.size());  // every token's, each sent with its text
  EXPECT_TRUE(choice.finished);
  EXPECT_EQ(choice.end.finish_reason, "length");
  EXPECT_EQ(choice.completion_tokens, static_cast<int64_t>(ids.size()));
  EXPECT_TRUE(process_output(choice, updates(ids, FinishReason::kLength).back(), 0).text.empty());  // finished
}

TEST_F(OutputProcessorTest, StopStringEndsTheChoiceBeforeIt) {
  const std::vector<int32_t> ids = testing::fixture_tokenizer().encode("hello world, again", false);
  Choice choice = make_choice({"world"});
  std::string text;
  bool matched = false;
  for (const RequestOutput& u : updates(ids, FinishReason::kLength)) {
    const ChoiceDelta d = process_output(choice, u, -1);
    EXPECT_TRUE(d.logprobs.empty());  // not asked for
    text += d.text;
    if (d.stop_string_matched) {
      matched = true;
      EXPECT_TRUE(d.finished);
    }
  }
  EXPECT_TRUE(matched);
  EXPECT_EQ(text, "hello ");
  EXPECT_EQ(choice.end.finish_reason, "stop");
  EXPECT_EQ(choice.end.stop_string, "world");
}

TEST_F(OutputProcessorTest, TheStopTokenIsNotText) {
  const std::vector<int32_t> ids = testing::fixture_tokenizer().encode("hello world", false);
  std::vector<RequestOutput> us = updates(ids, FinishReason::kStop);
  us.back().stop_token_id = ids.back();
  Choice choice = make_choice();
  std::string text;
  size_t num_logprobs = 0;
  for (const RequestOutput& u : us) {
    const ChoiceDelta d = process_output(choice, u, 0);
    text += d.text;
    num_logprobs += d.logprobs.size();
  }
  EXPECT_EQ(text, testing::fixture_tokenizer().decode(std::vector<int32_t>(ids.begin(), ids.end() - 1)));
  EXPECT_EQ(num_logprobs, ids.size());  // its logprobs go out with the final chunk, as vLLM
  EXPECT_EQ(choice.end.finish_reason, "stop");
  EXPECT_EQ(choice.end.stop_token_id, ids.back());
}

TEST_F(OutputProcessorTest, EngineFailureAndShutdownAreErrors) {
  for (auto [reason, status] : {std::pair{FinishReason::kError, 500}, {FinishReason::kAbort, 503}}) {
    Choice choice = make_choice();
    RequestOutput u;
    u.finished = true;
    u.finish_reason = reason;
    const ChoiceDelta d = process_output(choice, u, -1);
    ASSERT_TRUE(d.error);
    EXPECT_EQ(d.error->http_status, status);
  }
}

TEST_F(OutputProcessorTest, EchoGoesFirstOnceAndEchoOnlyDropsTheToken) {
  const std::vector<int32_t> ids = testing::fixture_tokenizer().encode("hello world", false);
  Choice echo = make_choice();
  echo.echo = true;
  echo.echo_text = "prompt:";
  echo.first_prompt_token = 1;
  const std::vector<RequestOutput> us = updates(ids, FinishReason::kLength);
  const ChoiceDelta first = process_output(echo, us[0], 0);
  EXPECT_EQ(first.text.rfind("prompt:", 0), 0u);
  ASSERT_GE(first.logprobs.size(), 1u);
  EXPECT_TRUE(std::isnan(first.logprobs[0].chosen.logprob));  // the first prompt token has none
  EXPECT_EQ(process_output(echo, us[1], 0).text.find("prompt:"), std::string::npos);

  Choice only = make_choice();
  only.echo = only.echo_only = true;
  only.echo_text = "prompt:";
  RequestOutput u = us[0];
  u.finished = true;
  u.finish_reason = FinishReason::kLength;
  EXPECT_EQ(process_output(only, u, -1).text, "prompt:");
}

}  // namespace
}  // namespace crosspoint
