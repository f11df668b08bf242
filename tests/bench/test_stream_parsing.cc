// SSE splitting under every fragmentation, and vLLM's token-event rules.
#include <gtest/gtest.h>

#include "bench/sse_parser.h"
#include "bench/stream_accumulator.h"

namespace crosspoint::bench {
namespace {

const std::string kStream =
    ": keep-alive comment\n\n"
    "data: {\"choices\":[{\"index\":0,\"text\":\"Hel\"}]}\n\n"
    "data: {\"choices\":[{\"index\":0,\"text\":\"\"}]}\r\n\r\n"
    "data: {\"choices\":[{\"index\":0,\"text\":\"lo\",\"finish_reason\":\"length\"}]}\n\n"
    "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":3,\"total_tokens\":8}}\n\n"
    "data: [DONE]\n\n";

TEST(SseParser, SameMessagesForEverySplitPoint) {
  for (size_t split = 0; split <= kStream.size(); ++split) {
    SseParser parser;
    std::vector<std::string> payloads = parser.feed(std::string_view(kStream).substr(0, split));
    for (auto& p : parser.feed(std::string_view(kStream).substr(split))) payloads.push_back(p);
    ASSERT_EQ(payloads.size(), 5u) << "split at " << split;
    EXPECT_EQ(payloads.front(), "{\"choices\":[{\"index\":0,\"text\":\"Hel\"}]}");
    EXPECT_EQ(payloads.back(), "[DONE]");
    EXPECT_TRUE(parser.pending().empty());
  }
}

TEST(SseParser, ByteByByteAndUnfinishedMessage) {
  SseParser parser;
  int count = 0;
  for (char c : kStream) count += static_cast<int>(parser.feed(std::string_view(&c, 1)).size());
  EXPECT_EQ(count, 5);
  parser.feed("data: {\"choices\":");
  EXPECT_EQ(parser.pending(), "data: {\"choices\":");
}

TEST(StreamAccumulator, TokenEventsUsageAndDone) {
  RequestRecord record;
  record.start_s = 1.0;
  record.prompt_len = 4;
  StreamAccumulator acc(record);
  SseParser parser;
  const auto payloads = parser.feed(kStream);
  const double times[] = {1.25, 1.5, 2.0, 2.5, 2.6};
  for (size_t i = 0; i < payloads.size(); ++i) ASSERT_TRUE(acc.on_payload(payloads[i], times[i]).is_ok());
  EXPECT_TRUE(acc.saw_done());
  EXPECT_EQ(acc.num_token_events(), 3);  // an empty text still counts, as in vLLM
  EXPECT_DOUBLE_EQ(record.ttft_s, 0.25);
  ASSERT_EQ(record.itl_s.size(), 2u);
  EXPECT_DOUBLE_EQ(record.itl_s[0], 0.25);
  EXPECT_DOUBLE_EQ(record.itl_s[1], 0.5);
  EXPECT_DOUBLE_EQ(record.latency_s, 1.0);  // last token event, not the usage chunk or [DONE]
  EXPECT_EQ(record.usage_completion_tokens, 3);
  EXPECT_EQ(record.prompt_len, 5);  // usage.prompt_tokens overwrites the sample's count
  EXPECT_EQ(record.generated_text, "Hello");
}

TEST(StreamAccumulator, ChatDeltas) {
  RequestRecord record;
  StreamAccumulator acc(record);
  ASSERT_TRUE(acc.on_payload(R"({"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]})", 0.1).is_ok());
  ASSERT_TRUE(acc.on_payload(R"({"choices":[{"index":0,"delta":{"content":"Hi"}}]})", 0.2).is_ok());
  EXPECT_EQ(acc.num_token_events(), 2);
  EXPECT_EQ(record.generated_text, "Hi");
}

TEST(StreamAccumulator, MalformedAndErrorPayloadsFail) {
  RequestRecord record;
  StreamAccumulator acc(record);
  Status bad = acc.on_payload("{\"choices\": [ not json", 0.1);
  EXPECT_FALSE(bad.is_ok());
  EXPECT_NE(bad.message().find("malformed stream chunk"), std::string::npos);
  Status error = acc.on_payload(R"({"error":{"message":"KV cache is full","code":500}})", 0.2);
  EXPECT_FALSE(error.is_ok());
  EXPECT_NE(error.message().find("KV cache is full"), std::string::npos);
  EXPECT_FALSE(acc.on_payload("[1, 2]", 0.3).is_ok());
}

}  // namespace
}  // namespace crosspoint::bench
