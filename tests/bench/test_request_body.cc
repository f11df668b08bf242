// The request bodies bench serve sends: vLLM's fields, and on the chat endpoint max_tokens beside
// max_completion_tokens for servers that read only the older name.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "bench/request_body.h"

namespace crosspoint::bench {
namespace {

TEST(RequestBody, ChatSendsBothLengthFieldsAndStreamsUsage) {
  RequestBodyOptions options;
  options.endpoint = "/v1/chat/completions";
  options.model = "m";
  SampleRequest sample;
  sample.prompt = "hello \xff";  // invalid UTF-8 is replaced, not a throw
  sample.expected_output_len = 7;
  const auto body = nlohmann::json::parse(build_request_body(options, sample));
  EXPECT_EQ(body["max_completion_tokens"], 7);
  EXPECT_EQ(body["max_tokens"], 7);
  EXPECT_EQ(body["messages"][0]["role"], "user");
  EXPECT_EQ(body["stream"], true);
  EXPECT_EQ(body["stream_options"]["include_usage"], true);
  EXPECT_FALSE(body.contains("temperature"));
  EXPECT_FALSE(body.contains("ignore_eos"));
}

TEST(RequestBody, CompletionsAsVllmSendsThem) {
  RequestBodyOptions options;
  options.endpoint = "/v1/completions";
  options.model = "m";
  options.temperature = 0.0;
  options.ignore_eos = true;
  SampleRequest sample;
  sample.prompt = "p";
  sample.expected_output_len = 3;
  const auto body = nlohmann::json::parse(build_request_body(options, sample));
  EXPECT_EQ(body["prompt"], "p");
  EXPECT_EQ(body["max_tokens"], 3);
  EXPECT_EQ(body["repetition_penalty"], 1.0);
  EXPECT_EQ(body["temperature"], 0.0);
  EXPECT_EQ(body["ignore_eos"], true);
  EXPECT_FALSE(body.contains("max_completion_tokens"));
}

}  // namespace
}  // namespace crosspoint::bench
