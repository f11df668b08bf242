// The sampling fields that change the logits: presence_penalty, frequency_penalty,
// repetition_penalty, min_p and logit_bias are read into the request's sampling parameters, and
// a value outside vLLM's range (OpenAI's for logit_bias) is a 400 naming its field.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "server/openai_request.h"

namespace crosspoint {
namespace {

using json = nlohmann::json;

std::optional<ApiError> parse(ApiEndpoint endpoint, json body, OpenAiRequest* out) {
  if (endpoint == ApiEndpoint::kCompletions) {
    body["prompt"] = "x";
  } else {
    body["messages"] = json::array({{{"role", "user"}, {"content", "x"}}});
  }
  return parse_openai_request(body.dump(), endpoint, out);
}

TEST(SamplingFields, AreReadOnBothEndpoints) {
  for (ApiEndpoint endpoint : {ApiEndpoint::kCompletions, ApiEndpoint::kChatCompletions}) {
    OpenAiRequest r;
    const json body = {{"presence_penalty", 0.5},
                       {"frequency_penalty", -1.25},
                       {"repetition_penalty", 1.3},
                       {"min_p", 0.05},
                       {"logit_bias", {{"7", 3.5}, {"12", -100}}}};
    ASSERT_FALSE(parse(endpoint, body, &r).has_value());
    EXPECT_EQ(r.sampling.presence_penalty, 0.5f);
    EXPECT_EQ(r.sampling.frequency_penalty, -1.25f);
    EXPECT_EQ(r.sampling.repetition_penalty, 1.3f);
    EXPECT_EQ(r.sampling.min_p, 0.05f);
    ASSERT_EQ(r.sampling.logit_bias.size(), 2u);
    // nlohmann's objects iterate in key order: "12" before "7".
    EXPECT_EQ(r.sampling.logit_bias[0].token_id, 12);
    EXPECT_EQ(r.sampling.logit_bias[0].bias, -100.0f);
    EXPECT_EQ(r.sampling.logit_bias[1].token_id, 7);
    EXPECT_EQ(r.sampling.logit_bias[1].bias, 3.5f);
    EXPECT_TRUE(r.sampling.processes_logits());
  }
}

TEST(SamplingFields, DefaultsChangeNothing) {
  OpenAiRequest r;
  const json body = {{"presence_penalty", 0},
                     {"frequency_penalty", nullptr},
                     {"repetition_penalty", 1},
                     {"min_p", 0},
                     {"logit_bias", json::object()}};
  ASSERT_FALSE(parse(ApiEndpoint::kCompletions, body, &r).has_value());
  EXPECT_FALSE(r.sampling.processes_logits());
  EXPECT_EQ(r.sampling.min_p, 0.0f);
}

TEST(SamplingFields, OutOfRangeValuesAre400sNamingTheField) {
  const std::pair<const char*, json> bad[] = {
      {"presence_penalty", 2.5},
      {"presence_penalty", -2.01},
      {"presence_penalty", "1"},
      {"frequency_penalty", 3},
      {"frequency_penalty", -7},
      {"repetition_penalty", 0},
      {"repetition_penalty", -1.5},
      {"repetition_penalty", 1e-50},  // rounds to 0 as a float
      {"min_p", 1.5},
      {"min_p", -0.1},
      {"logit_bias", json::array({1, 2})},
      {"logit_bias", {{"abc", 1}}},
      {"logit_bias", {{"-3", 1}}},
      {"logit_bias", {{"1.5", 1}}},
      {"logit_bias", {{"", 1}}},
      {"logit_bias", {{"99999999999", 1}}},
      {"logit_bias", {{"5", 100.5}}},
      {"logit_bias", {{"5", -101}}},
      {"logit_bias", {{"5", "1"}}},
      {"logit_bias", {{"5", nullptr}}},
  };
  for (ApiEndpoint endpoint : {ApiEndpoint::kCompletions, ApiEndpoint::kChatCompletions}) {
    for (const auto& [name, value] : bad) {
      OpenAiRequest r;
      auto e = parse(endpoint, {{name, value}}, &r);
      ASSERT_TRUE(e.has_value()) << name << " = " << value.dump() << " accepted";
      EXPECT_EQ(e->http_status, 400);
      EXPECT_EQ(e->param, name) << e->message;
      EXPECT_NE(e->message.find(name), std::string::npos) << e->message;
    }
  }
}

TEST(SamplingFields, RangeEndsAreAccepted) {
  OpenAiRequest r;
  ASSERT_FALSE(parse(ApiEndpoint::kCompletions,
                     {{"presence_penalty", -2}, {"frequency_penalty", 2}, {"min_p", 1}, {"logit_bias", {{"0", 100}}}},
                     &r)
                   .has_value());
  EXPECT_EQ(r.sampling.min_p, 1.0f);
  EXPECT_EQ(r.sampling.logit_bias[0].bias, 100.0f);
}

TEST(SamplingFields, NChoices) {
  for (ApiEndpoint endpoint : {ApiEndpoint::kCompletions, ApiEndpoint::kChatCompletions}) {
    OpenAiRequest r;
    ASSERT_FALSE(parse(endpoint, {{"n", 3}, {"temperature", 0.8}}, &r).has_value());
    EXPECT_EQ(r.n, 3);
    ASSERT_FALSE(parse(endpoint, {{"n", 4}, {"best_of", 4}}, &r).has_value());  // temperature 1 by default
    EXPECT_EQ(r.n, 4);
    ASSERT_FALSE(parse(endpoint, {{"n", 1}, {"temperature", 0}}, &r).has_value());
    EXPECT_EQ(r.n, 1);
    const std::pair<const char*, json> bad[] = {
        {"n", {{"n", 0}}},
        {"n", {{"n", -2}}},
        {"n", {{"n", kMaxChoices + 1}}},
        {"n", {{"n", 1.5}}},
        {"n", {{"n", "2"}}},
        // vLLM: "n must be 1 when using greedy sampling".
        {"n", {{"n", 2}, {"temperature", 0}}},
        {"best_of", {{"n", 2}, {"best_of", 3}}},
        {"best_of", {{"best_of", 2}}},
    };
    for (const auto& [name, body] : bad) {
      auto e = parse(endpoint, body, &r);
      ASSERT_TRUE(e.has_value()) << body.dump() << " accepted";
      EXPECT_EQ(e->http_status, 400);
      EXPECT_EQ(e->param, name) << e->message;
      EXPECT_NE(e->message.find(name), std::string::npos) << e->message;
    }
  }
}

TEST(SamplingFields, ChoiceSeedsAreTheSeedPlusTheIndex) {
  // As vLLM's parallel sampling derives them: choice 0 draws what n = 1 draws.
  EXPECT_EQ(choice_seed(42, 0), 42u);
  EXPECT_EQ(choice_seed(42, 3), 45u);
  EXPECT_EQ(choice_seed(~uint64_t{0}, 1), 0u);  // wraps
}

}  // namespace
}  // namespace crosspoint
