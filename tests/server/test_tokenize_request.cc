#include <gtest/gtest.h>

#include "server/tokenize_request.h"

namespace crosspoint {
namespace {

TEST(TokenizeRequest, PromptAndModel) {
  TokenizeRequest request;
  ASSERT_FALSE(parse_tokenize_request(R"({"prompt":"Hello","model":"m"})", &request));
  EXPECT_EQ(request.prompt, "Hello");
  EXPECT_EQ(request.model, "m");
  TokenizeRequest no_model;
  ASSERT_FALSE(parse_tokenize_request(R"({"prompt":"","model":7})", &no_model));
  EXPECT_EQ(no_model.model, "");
}

TEST(TokenizeRequest, RejectionsNameThePrompt) {
  for (const char* body : {"", "[]", "{\"prompt\":1}", "{\"text\":\"x\"}", "{\"prompt\":\"x\""}) {
    SCOPED_TRACE(body);
    TokenizeRequest request;
    auto error = parse_tokenize_request(body, &request);
    ASSERT_TRUE(error);
    EXPECT_EQ(error->http_status, 400);
    EXPECT_EQ(error->param, "prompt");
  }
}

TEST(DetokenizeRequest, IdsInsideTheVocabulary) {
  DetokenizeRequest request;
  ASSERT_FALSE(parse_detokenize_request(R"({"tokens":[0,5,99]})", 100, &request));
  EXPECT_EQ(request.tokens, (std::vector<int32_t>{0, 5, 99}));
}

TEST(DetokenizeRequest, RejectionsNameTheTokens) {
  for (const char* body :
       {"{}", "{\"tokens\":3}", "{\"tokens\":[100]}", "{\"tokens\":[-1]}", "{\"tokens\":[1.5]}", "{\"tokens\":[\"1\"]}",
        "{\"tokens\":[18446744073709551615]}", "{\"tokens\":[9223372036854775808]}"}) {
    SCOPED_TRACE(body);
    DetokenizeRequest request;
    auto error = parse_detokenize_request(body, 100, &request);
    ASSERT_TRUE(error);
    EXPECT_EQ(error->param, "tokens");
  }
}

}  // namespace
}  // namespace crosspoint
