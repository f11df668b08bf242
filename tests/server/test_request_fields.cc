// The request-field table (server/request_fields.h): every refused field is refused with a 400
// naming it when its value would change the output and accepted when it would not; ignored and
// unknown fields pass (unknown ones reported for the log); docs/serving.md lists the same rows.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "server/openai_request.h"
#include "server/request_fields.h"

namespace crosspoint {
namespace {

using json = nlohmann::json;

// A minimal valid body for the endpoint, plus one field.
std::string body_with(ApiEndpoint endpoint, const std::string& name, const json& value) {
  json body = endpoint == ApiEndpoint::kCompletions
                  ? json{{"prompt", "x"}}
                  : json{{"messages", json::array({{{"role", "user"}, {"content", "x"}}})}};
  body[name] = value;
  return body.dump();
}

std::optional<ApiError> parse(ApiEndpoint endpoint, const std::string& body, OpenAiRequest* out = nullptr) {
  OpenAiRequest scratch;
  return parse_openai_request(body, endpoint, out != nullptr ? out : &scratch);
}

// Values that do something for at least one of the refused fields' no-op tests.
const json kEffectiveValues[] = {true, 2, -1, 0.5, "x", json::array({1}), json{{"a", 1}}};

TEST(RequestFields, RefusedFieldsAre400sNamingThemAndNullIsAccepted) {
  int refused = 0;
  for (const RequestField& f : request_fields()) {
    if (f.use != FieldUse::kRefused) continue;
    for (ApiEndpoint endpoint : {ApiEndpoint::kCompletions, ApiEndpoint::kChatCompletions}) {
      if (!(endpoint == ApiEndpoint::kChatCompletions ? f.chat : f.completions)) continue;
      EXPECT_FALSE(parse(endpoint, body_with(endpoint, f.name, nullptr)).has_value()) << f.name << ": null refused";
      int tried = 0;
      for (const json& v : kEffectiveValues) {
        if (f.is_no_op(v)) continue;
        ++tried;
        auto e = parse(endpoint, body_with(endpoint, f.name, v));
        ASSERT_TRUE(e.has_value()) << f.name << " = " << v.dump() << " accepted";
        EXPECT_EQ(e->http_status, 400);
        EXPECT_EQ(e->param, f.name);
        EXPECT_NE(e->message.find(f.name), std::string::npos) << e->message;
      }
      EXPECT_GT(tried, 0) << f.name << ": every test value counts as a no-op";
      ++refused;
    }
  }
  EXPECT_GT(refused, 40);
}

TEST(RequestFields, NoOpValuesAreAccepted) {
  const std::pair<const char*, json> chat_no_ops[] = {
      {"response_format", {{"type", "text"}}},
      {"tool_choice", "none"},
      {"tool_choice", "auto"},
      {"tools", json::array()},
      {"logit_bias", json::object()},
      {"n", 1},
      {"logprobs", false},
      {"top_logprobs", 0},
      {"modalities", json::array({"text"})},
      {"spaces_between_special_tokens", true},
      {"add_special_tokens", false},
      {"priority", 0},
      {"parallel_tool_calls", true},
      {"prediction", {{"type", "content"}, {"content", "x"}}},
      {"user", "someone"},
      {"metadata", {{"k", "v"}}},
  };
  for (const auto& [name, value] : chat_no_ops) {
    auto e = parse(ApiEndpoint::kChatCompletions, body_with(ApiEndpoint::kChatCompletions, name, value));
    EXPECT_FALSE(e.has_value()) << name << " = " << value.dump() << ": " << (e ? e->message : "");
  }
}

TEST(RequestFields, OutputChangingValuesAreRefused) {
  const std::tuple<ApiEndpoint, const char*, json> cases[] = {
      {ApiEndpoint::kChatCompletions, "response_format", {{"type", "json_object"}}},
      {ApiEndpoint::kChatCompletions, "tool_choice", "required"},
      {ApiEndpoint::kChatCompletions, "chat_template", "{{ messages }}"},
      {ApiEndpoint::kChatCompletions, "prompt_logprobs", 1},
      {ApiEndpoint::kCompletions, "typical_p", 0.9},
      {ApiEndpoint::kCompletions, "min_tokens", 4},
      {ApiEndpoint::kCompletions, "guided_choice", json::array({"a", "b"})},
      {ApiEndpoint::kCompletions, "suffix", "tail"},
      {ApiEndpoint::kChatCompletions, "echo", true},
  };
  for (const auto& [endpoint, name, value] : cases) {
    auto e = parse(endpoint, body_with(endpoint, name, value));
    ASSERT_TRUE(e.has_value()) << name << " = " << value.dump();
    EXPECT_EQ(e->param, name);
  }
  auto e = parse(ApiEndpoint::kCompletions,
                 R"({"prompt":"x","stream":true,"stream_options":{"continuous_usage_stats":true}})");
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->param, "stream_options");
}

TEST(RequestFields, ChatTemplateVariablesAndContinuationAreRead) {
  OpenAiRequest r;
  ASSERT_FALSE(parse(ApiEndpoint::kChatCompletions,
                     R"({"messages":[{"role":"user","content":"x"},{"role":"assistant","content":"Once"}],)"
                     R"("chat_template_kwargs":{"enable_thinking":false},"add_generation_prompt":false,)"
                     R"("continue_final_message":true})",
                     &r)
                   .has_value());
  EXPECT_EQ(r.chat_options.kwargs, json({{"enable_thinking", false}}));
  EXPECT_FALSE(r.chat_options.add_generation_prompt);
  EXPECT_TRUE(r.chat_options.continue_final_message);
  const std::pair<const char*, const char*> refused[] = {
      {R"({"messages":[{"role":"user","content":"x"}],"chat_template_kwargs":[1]})", "chat_template_kwargs"},
      {R"({"messages":[{"role":"user","content":"x"}],"chat_template_kwargs":{"messages":[]}})",
       "chat_template_kwargs"},
      {R"({"messages":[{"role":"user","content":"x"}],"continue_final_message":true})", "continue_final_message"},
  };
  for (const auto& [body, param] : refused) {
    auto e = parse(ApiEndpoint::kChatCompletions, body);
    ASSERT_TRUE(e.has_value()) << body;
    EXPECT_EQ(e->param, param) << body;
  }
}

TEST(RequestFields, UnknownFieldsPassAndAreReported) {
  OpenAiRequest r;
  ASSERT_FALSE(parse(ApiEndpoint::kCompletions, R"({"prompt":"x","frobnicate":1,"messages":[]})", &r).has_value());
  EXPECT_EQ(r.unknown_fields, (std::vector<std::string>{"frobnicate", "messages"}));  // messages: a chat field
  ASSERT_FALSE(
      parse(ApiEndpoint::kChatCompletions, body_with(ApiEndpoint::kChatCompletions, "prompt", "y"), &r).has_value());
  EXPECT_EQ(r.unknown_fields, (std::vector<std::string>{"prompt"}));
}

TEST(RequestFields, MaxCompletionTokensWorksOnCompletionsToo) {
  OpenAiRequest r;
  ASSERT_FALSE(
      parse(ApiEndpoint::kCompletions, R"({"prompt":"x","max_tokens":5,"max_completion_tokens":7})", &r).has_value());
  ASSERT_TRUE(r.max_tokens.has_value());
  EXPECT_EQ(*r.max_tokens, 7);
}

// docs/serving.md's "Request fields" table has exactly the code's rows.
TEST(RequestFields, TheDocsTableListsEveryField) {
  std::ifstream doc(std::string(CROSSPOINT_SOURCE_DIR) + "/docs/serving.md");
  ASSERT_TRUE(doc.good());
  std::map<std::string, std::string> rows;  // name -> "completions|chat|crosspoint" cells
  std::string line;
  while (std::getline(doc, line)) {
    if (line.rfind("| `", 0) != 0) continue;
    const size_t close = line.find('`', 3);
    rows[line.substr(3, close - 3)] = line;
  }
  const char* use_words[] = {"honoured", "refused", "ignored"};
  size_t found = 0;
  for (const RequestField& f : request_fields()) {
    auto it = rows.find(f.name);
    ASSERT_NE(it, rows.end()) << f.name << " is missing from docs/serving.md";
    std::vector<std::string> cells;
    std::stringstream ss(it->second);
    std::string cell;
    while (std::getline(ss, cell, '|')) cells.push_back(cell);
    ASSERT_GE(cells.size(), 5u) << it->second;
    EXPECT_EQ(cells[2].find("yes") != std::string::npos, f.completions) << it->second;
    EXPECT_EQ(cells[3].find("yes") != std::string::npos, f.chat) << it->second;
    EXPECT_EQ(cells[4].find(use_words[static_cast<int>(f.use)]), 1u) << it->second;
    ++found;
  }
  EXPECT_EQ(found, request_fields().size());
}

}  // namespace
}  // namespace crosspoint
