// OpenAI logprobs in the server: request parsing (ranges, types, chat's logprobs/top_logprobs
// pair), the JSON shapes of both endpoints, and how a stream's logprobs stay with its text when
// the decoder or the stop-string matcher holds text back.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>

#include "server/logprob_aligner.h"
#include "server/logprobs_json.h"
#include "server/openai_request.h"
#include "server/openai_response.h"
#include "server/fixture_tokenizer.h"
#include "server/prompt_logprobs_json.h"
#include "tokenizer/tokenizer.h"

namespace crosspoint {
namespace {

using json = nlohmann::json;

std::optional<ApiError> parse(ApiEndpoint endpoint, const std::string& body, OpenAiRequest* out = nullptr) {
  OpenAiRequest scratch;
  return parse_openai_request(body, endpoint, out != nullptr ? out : &scratch);
}

int32_t parsed_num_logprobs(ApiEndpoint endpoint, const std::string& body) {
  OpenAiRequest r;
  auto e = parse(endpoint, body, &r);
  EXPECT_FALSE(e.has_value()) << body << ": " << (e ? e->message : "");
  return r.sampling.num_logprobs;
}

void expect_400(ApiEndpoint endpoint, const std::string& body, const std::string& param) {
  auto e = parse(endpoint, body);
  ASSERT_TRUE(e.has_value()) << body << " accepted";
  EXPECT_EQ(e->http_status, 400);
  EXPECT_EQ(e->param, param) << e->message;
  EXPECT_NE(e->message.find(param), std::string::npos) << e->message;
}

constexpr auto kCompletions = ApiEndpoint::kCompletions;
constexpr auto kChat = ApiEndpoint::kChatCompletions;

TEST(LogprobsRequest, CompletionsTakeAnIntegerFromZeroToTwenty) {
  EXPECT_EQ(parsed_num_logprobs(kCompletions, R"({"prompt":"x"})"), -1);
  EXPECT_EQ(parsed_num_logprobs(kCompletions, R"({"prompt":"x","logprobs":null})"), -1);
  EXPECT_EQ(parsed_num_logprobs(kCompletions, R"({"prompt":"x","logprobs":0})"), 0);
  EXPECT_EQ(parsed_num_logprobs(kCompletions, R"({"prompt":"x","logprobs":20})"), 20);
  EXPECT_EQ(parsed_num_logprobs(kCompletions, R"({"prompt":"x","logprobs":3.0})"), 3);
  expect_400(kCompletions, R"({"prompt":"x","logprobs":21})", "logprobs");
  expect_400(kCompletions, R"({"prompt":"x","logprobs":-1})", "logprobs");
  expect_400(kCompletions, R"({"prompt":"x","logprobs":true})", "logprobs");
  expect_400(kCompletions, R"({"prompt":"x","logprobs":"5"})", "logprobs");
  expect_400(kCompletions, R"({"prompt":"x","logprobs":2.5})", "logprobs");
}

TEST(LogprobsRequest, ChatTakesABooleanAndTopLogprobs) {
  const std::string messages = R"("messages":[{"role":"user","content":"x"}])";
  auto body = [&](const std::string& fields) { return "{" + messages + fields + "}"; };
  EXPECT_EQ(parsed_num_logprobs(kChat, body("")), -1);
  EXPECT_EQ(parsed_num_logprobs(kChat, body(R"(,"logprobs":false)")), -1);
  EXPECT_EQ(parsed_num_logprobs(kChat, body(R"(,"logprobs":true)")), 0);
  EXPECT_EQ(parsed_num_logprobs(kChat, body(R"(,"logprobs":true,"top_logprobs":7)")), 7);
  EXPECT_EQ(parsed_num_logprobs(kChat, body(R"(,"logprobs":true,"top_logprobs":null)")), 0);
  EXPECT_EQ(parsed_num_logprobs(kChat, body(R"(,"top_logprobs":0)")), -1);  // vLLM: 0 alone asks nothing
  expect_400(kChat, body(R"(,"top_logprobs":2)"), "top_logprobs");
  expect_400(kChat, body(R"(,"logprobs":false,"top_logprobs":2)"), "top_logprobs");
  expect_400(kChat, body(R"(,"logprobs":true,"top_logprobs":21)"), "top_logprobs");
  expect_400(kChat, body(R"(,"logprobs":true,"top_logprobs":-1)"), "top_logprobs");
  expect_400(kChat, body(R"(,"logprobs":3)"), "logprobs");
}

TEST(LogprobsRequest, CompletionsIgnoreChatsTopLogprobsLikeAnyUnknownField) {
  OpenAiRequest r;
  ASSERT_FALSE(parse(kCompletions, R"({"prompt":"x","top_logprobs":5})", &r).has_value());
  EXPECT_EQ(r.sampling.num_logprobs, -1);
  EXPECT_EQ(r.unknown_fields, std::vector<std::string>{"top_logprobs"});
}

// ---- the stream's alignment -----------------------------------------------------------------

TokenLogprobs entry(int32_t id) { return {{id, -1.0 * id}, {}}; }

std::vector<int32_t> ids(const std::vector<TokenLogprobs>& v) {
  std::vector<int32_t> out;
  for (const auto& e : v) out.push_back(e.chosen.token_id);
  return out;
}

TEST(LogprobAligner, ATokenGoesOutWithTheLastByteOfItsText) {
  LogprobAligner a;
  a.push_token(entry(1));
  a.decoded(3);                                            // "abc"
  EXPECT_EQ(ids(a.emitted(2)), (std::vector<int32_t>{}));  // "ab": the stop matcher holds "c"
  a.push_token(entry(2));
  a.decoded(2);                                             // "de"
  EXPECT_EQ(ids(a.emitted(2)), (std::vector<int32_t>{1}));  // "cd"
  EXPECT_EQ(ids(a.emitted(1)), (std::vector<int32_t>{2}));  // "e"
}

TEST(LogprobAligner, TokensWithoutTextOfTheirOwnGoWithTheNextText) {
  LogprobAligner a;
  a.push_token(entry(1));
  a.decoded(0);  // the first byte of a two-byte character, held by the decoder
  EXPECT_TRUE(a.emitted(0).empty());
  a.push_token(entry(2));
  a.decoded(2);  // the character completes
  EXPECT_EQ(ids(a.emitted(2)), (std::vector<int32_t>{1, 2}));
}

TEST(LogprobAligner, WhatIsHeldAtTheEndGoesWithTheFinalChunk) {
  LogprobAligner a;
  a.push_token(entry(1));
  a.decoded(2);
  EXPECT_EQ(ids(a.emitted(2)), (std::vector<int32_t>{1}));
  a.push_token(entry(2));
  a.decoded(4);            // a stop string: never emitted
  a.push_token(entry(3));  // EOS: no text
  EXPECT_TRUE(a.emitted(0).empty());
  EXPECT_EQ(ids(a.flush()), (std::vector<int32_t>{2, 3}));
  EXPECT_TRUE(a.flush().empty());
}

// ---- JSON shapes ----------------------------------------------------------------------------

class LogprobsJson : public ::testing::Test {
 protected:
  int32_t id(const std::string& token) const { return *tokenizer_->token_id(token); }
  const Tokenizer* tokenizer_ = &testing::fixture_tokenizer();  // loaded once per binary
};

TEST_F(LogprobsJson, CompletionsShapeAsVllm) {
  const double inf = std::numeric_limits<double>::infinity();
  const int32_t a = id("a"), b = id("b"), c = id("c");
  // Token a chosen though b is more likely (sampled): the dict holds a and the top 2.
  const TokenLogprobs first = {{a, -1.5}, {{b, -0.5}, {c, -1.0}}};
  const TokenLogprobs second = {{b, -inf}, {}};
  const json j = completion_logprobs_json(*tokenizer_, std::vector<TokenLogprobs>{first, second}, 10);
  EXPECT_EQ(j["tokens"], json({"a", "b"}));
  EXPECT_EQ(j["token_logprobs"], json({-1.5, -9999.0}));
  EXPECT_EQ(j["text_offset"], json({10, 11}));
  EXPECT_EQ(j["top_logprobs"][0], json({{"a", -1.5}, {"b", -0.5}, {"c", -1.0}}));
  EXPECT_EQ(j["top_logprobs"][1], json({{"b", -9999.0}}));  // logprobs: 0 still names the chosen token
}

TEST_F(LogprobsJson, PromptLogprobsShapeAsVllm) {
  const double inf = std::numeric_limits<double>::infinity();
  const int32_t a = id("a"), b = id("b"), c = id("c");
  // Prompt "a b c": b's logprob given a (rank 2, c more likely), then c's given a b (rank 1).
  TokenLogprobs second = {{b, -1.5}, {{c, -0.5}, {b, -1.5}}};
  second.chosen_rank = 2;
  TokenLogprobs third = {{c, -inf}, {{a, -0.1}}};
  third.chosen_rank = 7;
  const json j = prompt_logprobs_json(*tokenizer_, std::vector<TokenLogprobs>{second, third}, 2);
  ASSERT_EQ(j.size(), 3u);
  EXPECT_TRUE(j[0].is_null());  // nothing precedes the first prompt token
  EXPECT_EQ(j[1], json({{std::to_string(b), {{"logprob", -1.5}, {"rank", 2}, {"decoded_token", "b"}}},
                        {std::to_string(c), {{"logprob", -0.5}, {"rank", 1}, {"decoded_token", "c"}}}}));
  EXPECT_EQ(j[2], json({{std::to_string(c), {{"logprob", -9999.0}, {"rank", 7}, {"decoded_token", "c"}}},
                        {std::to_string(a), {{"logprob", -0.1}, {"rank", 1}, {"decoded_token", "a"}}}}));
  // num_top caps the top entries; 0 leaves the prompt token alone.
  const json none = prompt_logprobs_json(*tokenizer_, std::vector<TokenLogprobs>{second}, 0);
  EXPECT_EQ(none[1].size(), 1u);
  EXPECT_TRUE(none[1].contains(std::to_string(b)));
  EXPECT_EQ(prompt_logprobs_json(*tokenizer_, {}, 3), json::array({nullptr}));  // a one-token prompt
}

TEST_F(LogprobsJson, EchoedPromptStartsWithANullEntry) {
  // The echo's first prompt token has no logprob: null, and null top_logprobs, as vLLM writes it;
  // text_offset runs on through the prompt into the completion.
  const int32_t a = id("a"), b = id("b");
  const std::vector<TokenLogprobs> tokens = {
      {{a, std::numeric_limits<double>::quiet_NaN()}, {}}, {{b, -2.0}, {{a, -0.5}}}, {{a, -0.25}, {{a, -0.25}}}};
  const json j = completion_logprobs_json(*tokenizer_, tokens, 0);
  EXPECT_EQ(j["tokens"], json({"a", "b", "a"}));
  EXPECT_EQ(j["token_logprobs"], json({nullptr, -2.0, -0.25}));
  EXPECT_EQ(j["top_logprobs"][0], nullptr);
  EXPECT_EQ(j["top_logprobs"][1], json({{"b", -2.0}, {"a", -0.5}}));
  EXPECT_EQ(j["text_offset"], json({0, 1, 2}));
  const ResponseHeader header{"cmpl-1", 1, "m", kCompletions};
  const ChoiceResult with_prompt[] = {{"aba", {"length", "", -1}, j, prompt_logprobs_json(*tokenizer_, {}, 0)}};
  const json body = json::parse(full_response_json(header, with_prompt, {2, 1}));
  EXPECT_EQ(body["choices"][0]["prompt_logprobs"], json::array({nullptr}));
  const ChoiceResult without[] = {{"a", {"length", "", -1}, nullptr, nullptr}};
  const json plain = json::parse(full_response_json(header, without, {2, 1}));
  EXPECT_FALSE(plain["choices"][0].contains("prompt_logprobs"));  // only when asked for
}

TEST_F(LogprobsJson, UnknownLogprobsAreNull) {
  const TokenLogprobs unknown = {{id("a"), std::numeric_limits<double>::quiet_NaN()}, {}};
  const json completion = completion_logprobs_json(*tokenizer_, std::vector<TokenLogprobs>{unknown}, 0);
  EXPECT_TRUE(completion["token_logprobs"][0].is_null());
  EXPECT_TRUE(completion["top_logprobs"][0].is_null());
  EXPECT_TRUE(chat_logprobs_json(*tokenizer_, std::vector<TokenLogprobs>{unknown})["content"][0]["logprob"].is_null());
}

TEST_F(LogprobsJson, ChatShapeWithBytes) {
  const int32_t a = id("a"), b = id("b");
  const TokenLogprobs t = {{a, -0.25}, {{a, -0.25}, {b, -2.0}}};
  const json j = chat_logprobs_json(*tokenizer_, std::vector<TokenLogprobs>{t});
  ASSERT_EQ(j["content"].size(), 1u);
  const json& c = j["content"][0];
  EXPECT_EQ(c["token"], "a");
  EXPECT_EQ(c["logprob"], -0.25);
  EXPECT_EQ(c["bytes"], json({97}));
  ASSERT_EQ(c["top_logprobs"].size(), 2u);
  EXPECT_EQ(c["top_logprobs"][1], json({{"token", "b"}, {"logprob", -2.0}, {"bytes", json({98})}}));
  const json none = chat_logprobs_json(*tokenizer_, std::vector<TokenLogprobs>{{{a, -0.25}, {}}});
  EXPECT_EQ(none["content"][0]["top_logprobs"], json::array());
}

TEST_F(LogprobsJson, APartialCharacterIsReplacementTextButItsRawBytes) {
  // A byte-level token standing for one byte of a multi-byte character.
  int32_t partial = -1;
  for (int32_t i = 0; i < tokenizer_->vocab_size() && partial < 0; ++i) {
    const std::string bytes = tokenizer_->token_bytes(i);
    if (bytes.size() == 1 && static_cast<unsigned char>(bytes[0]) >= 0xC2 &&
        static_cast<unsigned char>(bytes[0]) < 0xF0)
      partial = i;
  }
  ASSERT_GE(partial, 0) << "the tiny tokenizer has no lone lead byte";
  const unsigned char byte = static_cast<unsigned char>(tokenizer_->token_bytes(partial)[0]);
  const json j = chat_logprobs_json(*tokenizer_, std::vector<TokenLogprobs>{{{partial, -1.0}, {}}});
  EXPECT_EQ(j["content"][0]["token"], "\xEF\xBF\xBD");  // U+FFFD, as vLLM (Hugging Face's decode) gives
  EXPECT_EQ(j["content"][0]["bytes"], json({static_cast<int>(byte)}));
  const json c = completion_logprobs_json(*tokenizer_,
                                          std::vector<TokenLogprobs>{{{partial, -1.0}, {}}, {{partial, -1.0}, {}}}, 0);
  EXPECT_EQ(c["text_offset"], json({0, 1}));  // one character
}

TEST_F(LogprobsJson, ResponsesCarryThemAndNullOtherwise) {
  const ResponseHeader header{"cmpl-1", 1, "m", kCompletions};
  const ChoiceEnd end{"length", "", -1};
  const ChoiceResult with_logprobs[] = {
      {"a", end, completion_logprobs_json(*tokenizer_, std::vector<TokenLogprobs>{{{id("a"), -1.0}, {}}}, 0), nullptr}};
  const json with = json::parse(full_response_json(header, with_logprobs, {1, 1}));
  EXPECT_EQ(with["choices"][0]["logprobs"]["tokens"], json({"a"}));
  const ChoiceResult without[] = {{"a", end, nullptr, nullptr}};
  EXPECT_TRUE(json::parse(full_response_json(header, without, {1, 1}))["choices"][0]["logprobs"].is_null());
  EXPECT_TRUE(json::parse(chunk_json(header, 0, "a", nullptr))["choices"][0]["logprobs"].is_null());
}

}  // namespace
}  // namespace crosspoint
