#include <gtest/gtest.h>

#include "server/openai_request.h"
#include "server/openai_response.h"
#include "server/prometheus_metrics.h"

#include <nlohmann/json.hpp>

namespace crosspoint {
namespace {

std::optional<ApiError> parse(const std::string& body, OpenAiRequest* out = nullptr,
                              ApiEndpoint endpoint = ApiEndpoint::kCompletions) {
  OpenAiRequest scratch;
  return parse_openai_request(body, endpoint, out != nullptr ? out : &scratch);
}

TEST(OpenAiRequest, CompletionDefaultsAndFields) {
  OpenAiRequest r;
  ASSERT_FALSE(parse(R"({"model":"m","prompt":"hi"})", &r));
  EXPECT_EQ(r.prompt_text, "hi");
  EXPECT_EQ(*r.max_tokens, 16);
  EXPECT_EQ(r.sampling.temperature, 1.0f);
  EXPECT_FALSE(r.stream);
  ASSERT_FALSE(parse(R"({"prompt":[[1,2,3]],"max_tokens":null,"temperature":0,"top_k":-1,"seed":5,
                        "stop":"x","stop_token_ids":[7],"ignore_eos":true,"stream":true,
                        "stream_options":{"include_usage":true},"unknown_field":{"a":1}})",
                     &r));
  EXPECT_TRUE(r.prompt_is_token_ids);
  EXPECT_EQ(r.prompt_token_ids, (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(*r.max_tokens, 16);
  EXPECT_TRUE(r.sampling.is_greedy());
  EXPECT_EQ(r.sampling.top_k, 0);
  EXPECT_TRUE(r.has_seed);
  EXPECT_EQ(r.stop, std::vector<std::string>{"x"});
  EXPECT_EQ(r.stop_token_ids, std::vector<int32_t>{7});
  EXPECT_TRUE(r.ignore_eos && r.stream && r.include_usage);
}

// Integers past int64 (parsed by the JSON reader as unsigned) are refused naming the field,
// never wrapped to negative numbers.
TEST(OpenAiRequest, IntegersOutOfRangeNameTheirField) {
  for (const char* field : {"max_tokens", "max_completion_tokens", "seed", "top_k", "logprobs"}) {
    for (const char* value : {"9223372036854775808", "18446744073709551615"}) {
      auto e = parse(std::string(R"({"prompt":"hi",")") + field + "\":" + value + "}");
      ASSERT_TRUE(e) << field << " " << value;
      EXPECT_EQ(e->http_status, 400);
      EXPECT_EQ(e->param, field) << e->message;
      EXPECT_EQ(e->message.find('-'), std::string::npos) << e->message;  // no wrapped negative number
    }
  }
  auto e = parse(R"({"prompt":"hi","max_tokens":-9223372036854775808})");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->param, "max_tokens");
  e = parse(R"({"prompt":[1,9223372036854775808]})");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->param, "prompt");
  e = parse(R"({"prompt":"hi","stop_token_ids":[18446744073709551615]})");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->param, "stop_token_ids");
}

TEST(OpenAiRequest, ChatMessagesAndMaxCompletionTokens) {
  OpenAiRequest r;
  ASSERT_FALSE(parse(R"({"messages":[{"role":"system","content":"s"},
                                      {"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}],
                         "max_tokens":5,"max_completion_tokens":7})",
                     &r, ApiEndpoint::kChatCompletions));
  ASSERT_EQ(r.messages.size(), 2u);
  EXPECT_EQ(r.messages[1].content, "ab");
  EXPECT_EQ(*r.max_tokens, 7);
  ASSERT_FALSE(parse(R"({"messages":[{"role":"user","content":"x"}]})", &r, ApiEndpoint::kChatCompletions));
  EXPECT_FALSE(r.max_tokens.has_value());  // the rest of the context
}

TEST(OpenAiRequest, EchoAndPromptLogprobs) {
  OpenAiRequest r;
  ASSERT_FALSE(parse(R"({"prompt":"x","echo":true,"max_tokens":0})", &r));
  EXPECT_TRUE(r.echo);
  EXPECT_EQ(*r.max_tokens, 0);
  EXPECT_EQ(r.sampling.num_prompt_logprobs, -1);  // echo without logprobs needs none
  ASSERT_FALSE(parse(R"({"prompt":"x","echo":true,"logprobs":3})", &r));
  EXPECT_EQ(r.sampling.num_prompt_logprobs, 3);  // the echoed prompt's logprobs, as vLLM
  ASSERT_FALSE(parse(R"({"prompt":"x","echo":true,"logprobs":1,"prompt_logprobs":4})", &r));
  EXPECT_EQ(r.sampling.num_prompt_logprobs, 4);  // the larger of the two
  ASSERT_FALSE(parse(R"({"prompt":"x","prompt_logprobs":0})", &r));
  EXPECT_FALSE(r.echo);
  EXPECT_EQ(r.sampling.num_prompt_logprobs, 0);
  ASSERT_FALSE(parse(R"({"prompt":"x","echo":true,"logprobs":2,"stream":true})", &r));  // prompt logprobs as echo's
  EXPECT_EQ(r.sampling.num_prompt_logprobs, 2);
  ASSERT_FALSE(parse(R"({"prompt":"x","echo":null,"prompt_logprobs":null})", &r));
  EXPECT_FALSE(r.echo);
  EXPECT_EQ(r.sampling.num_prompt_logprobs, -1);
  // Chat honours neither, and says so.
  for (const char* body : {R"({"messages":[{"role":"user","content":"x"}],"echo":true})",
                           R"({"messages":[{"role":"user","content":"x"}],"prompt_logprobs":0})"}) {
    auto e = parse(body, &r, ApiEndpoint::kChatCompletions);
    ASSERT_TRUE(e.has_value()) << body;
    EXPECT_EQ(e->http_status, 400);
    EXPECT_NE(e->message.find("chat"), std::string::npos) << e->message;
  }
  ASSERT_FALSE(parse(R"({"messages":[{"role":"user","content":"x"}],"echo":false,"prompt_logprobs":null})", &r,
                     ApiEndpoint::kChatCompletions));
}

TEST(OpenAiRequest, RejectionsNameTheField) {
  struct Case {
    const char* body;
    const char* param;
  };
  const Case cases[] = {
      {R"({"prompt":"x","temperature":-1})", "temperature"},
      {R"({"prompt":"x","temperature":"hot"})", "temperature"},
      {R"({"prompt":"x","top_p":0})", "top_p"},
      {R"({"prompt":"x","top_p":1.5})", "top_p"},
      {R"({"prompt":"x","top_k":-2})", "top_k"},
      {R"({"prompt":"x","max_tokens":0})", "max_tokens"},
      {R"({"prompt":"x","max_tokens":2.5})", "max_tokens"},
      {R"({"prompt":"x","max_tokens":99999999999999999999})", "max_tokens"},
      {R"({"prompt":"x","n":3,"temperature":0})", "n"},
      {R"({"prompt":"x","logprobs":21})", "logprobs"},
      {R"({"prompt":"x","echo":"yes"})", "echo"},
      {R"({"prompt":"x","echo":false,"max_tokens":0})", "max_tokens"},
      {R"({"prompt":"x","echo":true,"max_tokens":-1})", "max_tokens"},
      {R"({"prompt":"x","prompt_logprobs":21})", "prompt_logprobs"},
      {R"({"prompt":"x","prompt_logprobs":-1})", "prompt_logprobs"},
      {R"({"prompt":"x","prompt_logprobs":true})", "prompt_logprobs"},
      {R"({"prompt":"x","prompt_logprobs":1,"stream":true})", "prompt_logprobs"},
      {R"({"prompt":"x","stream_options":{"include_usage":true}})", "stream_options"},
      {R"({"prompt":"x","stream":"yes"})", "stream"},
      {R"({"prompt":"x","stop":[1]})", "stop"},
      {R"({"prompt":"x","stop_token_ids":[-1]})", "stop_token_ids"},
      {R"({"prompt":""})", "prompt"},
      {R"({"prompt":[]})", "prompt"},
      {R"({"prompt":["a","b"]})", "prompt"},
      {R"({"prompt":[1,"a"]})", "prompt"},
      {R"({"prompt":7})", "prompt"},
      {R"({})", "prompt"},
      {R"({"prompt":"x","model":3})", "model"},
      {R"({"prompt":"x","presence_penalty":2.5})", "presence_penalty"},
  };
  for (const auto& c : cases) {
    auto e = parse(c.body);
    ASSERT_TRUE(e.has_value()) << c.body;
    EXPECT_EQ(e->http_status, 400) << c.body;
    EXPECT_EQ(e->param, c.param) << c.body;
    auto j = nlohmann::json::parse(e->to_json());
    EXPECT_EQ(j["error"]["code"], 400);
    EXPECT_EQ(j["error"]["type"], "BadRequestError");
  }
  EXPECT_TRUE(parse("{not json").has_value());
  EXPECT_TRUE(parse("[1]").has_value());
  EXPECT_TRUE(parse(R"({"prompt":"x","temperature":1e999})").has_value());
  EXPECT_TRUE(parse(R"({"messages":[{"role":"wizard","content":"x"}]})", nullptr, ApiEndpoint::kChatCompletions));
  EXPECT_TRUE(parse(R"({"messages":"hi"})", nullptr, ApiEndpoint::kChatCompletions));
  // Deeply nested garbage is refused, not a crash.
  EXPECT_TRUE(parse(std::string(100000, '[')).has_value());
}

// cache_salt as vLLM validates it: absent or null is no salt, otherwise a non-empty string.
TEST(OpenAiRequest, CacheSaltIsANonEmptyStringOrNothing) {
  OpenAiRequest r;
  ASSERT_FALSE(parse(R"({"prompt":"x","cache_salt":"tenant-1"})", &r));
  EXPECT_EQ(r.cache_salt, "tenant-1");
  ASSERT_FALSE(
      parse(R"({"messages":[{"role":"user","content":"x"}],"cache_salt":"s"})", &r, ApiEndpoint::kChatCompletions));
  EXPECT_EQ(r.cache_salt, "s");
  ASSERT_FALSE(parse(R"({"prompt":"x","cache_salt":null})", &r));
  EXPECT_EQ(r.cache_salt, "");
  ASSERT_FALSE(parse(R"({"prompt":"x"})", &r));
  EXPECT_EQ(r.cache_salt, "");
  for (const char* salt : {R"("")", "7", "true", R"(["a"])", R"({"a":1})"}) {
    auto e = parse(std::string(R"({"prompt":"x","cache_salt":)") + salt + "}");
    ASSERT_TRUE(e.has_value()) << salt;
    EXPECT_EQ(e->http_status, 400);
    EXPECT_EQ(e->param, "cache_salt");
    EXPECT_EQ(e->message, "Parameter 'cache_salt' must be a non-empty string if provided.");
  }
}

TEST(OpenAiResponse, ShapesMatchTheReference) {
  ResponseHeader header{"cmpl-1", 1, "m", ApiEndpoint::kCompletions};
  const ChoiceResult one[] = {{"Hi", {"stop", "##", -1}, nullptr, nullptr}};
  auto full = nlohmann::json::parse(full_response_json(header, one, {5, 2}));
  EXPECT_EQ(full["object"], "text_completion");
  EXPECT_EQ(full["choices"][0]["index"], 0);
  EXPECT_EQ(full["choices"][0]["text"], "Hi");
  EXPECT_EQ(full["choices"][0]["stop_reason"], "##");
  EXPECT_EQ(full["usage"]["total_tokens"], 7);
  auto chunk = nlohmann::json::parse(chunk_json(header, 0, "lo", nullptr));
  EXPECT_TRUE(chunk["choices"][0]["finish_reason"].is_null());
  ResponseHeader chat{"chatcmpl-1", 1, "m", ApiEndpoint::kChatCompletions};
  ChoiceEnd end{"stop", "", 42};
  auto last = nlohmann::json::parse(chunk_json(chat, 3, "", &end));
  EXPECT_EQ(last["object"], "chat.completion.chunk");
  EXPECT_EQ(last["choices"][0]["index"], 3);
  EXPECT_EQ(last["choices"][0]["stop_reason"], 42);
  EXPECT_EQ(nlohmann::json::parse(chat_role_chunk_json(chat, 2))["choices"][0]["index"], 2);
  // n choices: one entry each, in index order.
  const ChoiceResult two[] = {{"a", {"length", "", -1}, nullptr, nullptr}, {"b", {"stop", "", -1}, nullptr, nullptr}};
  auto both = nlohmann::json::parse(full_response_json(chat, two, {5, 6}));
  ASSERT_EQ(both["choices"].size(), 2u);
  EXPECT_EQ(both["choices"][1]["index"], 1);
  EXPECT_EQ(both["choices"][1]["message"]["content"], "b");
  EXPECT_EQ(both["choices"][1]["finish_reason"], "stop");
  EXPECT_EQ(both["usage"]["completion_tokens"], 6);
  auto usage = nlohmann::json::parse(usage_chunk_json(chat, {3, 4}));
  EXPECT_TRUE(usage["choices"].empty());
  EXPECT_EQ(usage["usage"]["completion_tokens"], 4);
}

TEST(PrometheusMetrics, HistogramsAreCumulativeWithInf) {
  EngineMetrics m;
  m.time_to_first_token_seconds.observe(0.003);
  m.time_to_first_token_seconds.observe(100.0);
  m.request_success["stop"] = 3;
  const std::string text = prometheus_text(m, "my\"model");
  EXPECT_NE(text.find("# TYPE vllm:time_to_first_token_seconds histogram"), std::string::npos);
  EXPECT_NE(
      text.find("vllm:time_to_first_token_seconds_bucket{model_name=\"my\\\"model\",engine=\"0\",le=\"0.001\"} 0"),
      std::string::npos);
  EXPECT_NE(text.find("le=\"0.005\"} 1"), std::string::npos);
  EXPECT_NE(text.find("le=\"+Inf\"} 2"), std::string::npos);
  EXPECT_NE(text.find("vllm:request_success_total{model_name=\"my\\\"model\",engine=\"0\",finished_reason=\"stop\"} 3"),
            std::string::npos);
  EXPECT_NE(text.find("# TYPE vllm:num_preemptions counter"), std::string::npos);
}

}  // namespace
}  // namespace crosspoint

namespace crosspoint {
namespace {

TEST(OpenAiRequest, AddSpecialTokensDefaultsAsVllm) {
  OpenAiRequest r;
  ASSERT_FALSE(parse_openai_request(R"({"prompt":"hi"})", ApiEndpoint::kCompletions, &r));
  EXPECT_TRUE(r.adds_special_tokens());  // completions: the tokenizer's BOS and the like
  ASSERT_FALSE(parse_openai_request(R"({"prompt":"hi","add_special_tokens":false})", ApiEndpoint::kCompletions, &r));
  EXPECT_FALSE(r.adds_special_tokens());
  ASSERT_FALSE(
      parse_openai_request(R"({"messages":[{"role":"user","content":"hi"}]})", ApiEndpoint::kChatCompletions, &r));
  EXPECT_FALSE(r.adds_special_tokens());  // chat: the template writes them
  ASSERT_FALSE(parse_openai_request(R"({"messages":[{"role":"user","content":"hi"}],"add_special_tokens":true})",
                                    ApiEndpoint::kChatCompletions, &r));
  EXPECT_TRUE(r.adds_special_tokens());
  auto e = parse_openai_request(R"({"prompt":"hi","add_special_tokens":1})", ApiEndpoint::kCompletions, &r);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->param, "add_special_tokens");
}

}  // namespace
}  // namespace crosspoint
