// The input processor alone (no sockets, no engine): request bodies on each route against the
// tiny fixture tokenizer, the limits it enforces with the field each refusal names, and the
// seeds it gives requests without one.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "server/input_processor.h"
#include "server/fixture_tokenizer.h"

namespace crosspoint {
namespace {

class InputProcessorTest : public ::testing::Test {
 protected:
  static InputProcessor make(int64_t max_model_len = 64, std::optional<uint64_t> seed = std::nullopt,
                             int32_t model_vocab = 0) {
    auto chat = chat_template_from_source(
        "{% for m in messages %}{{ m['role'] + ': ' + m['content'] + '\n' }}{% endfor %}"
        "{% if add_generation_prompt %}{{ 'assistant: ' }}{% endif %}");
    EXPECT_TRUE(chat.is_ok()) << chat.status().to_string();
    InputLimits limits;
    limits.served_model_name = "served";
    limits.max_model_len = max_model_len;
    limits.model_vocab_size = model_vocab;
    limits.seed = seed;
    return InputProcessor(limits, testing::fixture_tokenizer(), std::move(chat).value());
  }
};

TEST_F(InputProcessorTest, RoutesByPath) {
  EXPECT_EQ(post_route("/v1/completions"), Route::kCompletions);
  EXPECT_EQ(post_route("/v1/chat/completions"), Route::kChatCompletions);
  EXPECT_EQ(post_route("/tokenize"), Route::kTokenize);
  EXPECT_EQ(post_route("/detokenize"), Route::kDetokenize);
  EXPECT_EQ(post_route("/v1/models"), std::nullopt);
  EXPECT_EQ(post_route("/v1/completions/"), std::nullopt);
}

TEST_F(InputProcessorTest, CompletionBecomesTheEngineRequest) {
  const InputProcessor input = make();
  const PreparedRequest p = input.prepare(Route::kCompletions, R"({"model":"served","prompt":"hello world"})");
  ASSERT_FALSE(p.error) << p.error->message;
  const std::vector<int32_t> ids = testing::fixture_tokenizer().encode("hello world", true);
  EXPECT_EQ(p.engine_request.prompt_token_ids, ids);
  EXPECT_EQ(p.engine_request.max_tokens, 16);  // the completions API's default
  EXPECT_TRUE(p.reply.empty());
}

TEST_F(InputProcessorTest, ChatGoesThroughTheTemplate) {
  const InputProcessor input = make();
  const PreparedRequest p = input.prepare(Route::kChatCompletions, R"({"messages":[{"role":"user","content":"hi"}]})");
  ASSERT_FALSE(p.error) << p.error->message;
  const std::vector<int32_t> ids = testing::fixture_tokenizer().encode("user: hi\nassistant: ", false);
  EXPECT_EQ(p.engine_request.prompt_token_ids, ids);
  // No max_tokens: vLLM's default for chat, the rest of the context.
  EXPECT_EQ(p.engine_request.max_tokens, 64 - static_cast<int32_t>(ids.size()));
}

TEST_F(InputProcessorTest, RefusalsNameTheirField) {
  const InputProcessor input = make(/*max_model_len=*/8, std::nullopt, /*model_vocab=*/50);
  const auto refused = [&](Route route, const std::string& body) {
    const PreparedRequest p = input.prepare(route, body);
    EXPECT_TRUE(p.error) << body;
    return p.error ? *p.error : ApiError{};
  };
  EXPECT_EQ(refused(Route::kCompletions, R"({"model":"other","prompt":"x"})").http_status, 404);
  EXPECT_EQ(refused(Route::kCompletions, R"({"model":"other","prompt":"x"})").param, "model");
  EXPECT_EQ(refused(Route::kCompletions, R"({"prompt":[1,2,3,4,5,6,7,8,9]})").param, "prompt");  // >= max_model_len
  EXPECT_EQ(refused(Route::kCompletions, R"({"prompt":[1,60]})").param, "prompt");  // outside the model's 50 ids
  EXPECT_EQ(refused(Route::kCompletions, R"({"prompt":[1],"max_tokens":2,"logit_bias":{"70":1}})").param, "logit_bias");
  EXPECT_EQ(refused(Route::kCompletions, R"({"prompt":[1],"max_tokens":9})").param, "max_tokens");
  EXPECT_EQ(refused(Route::kChatCompletions, R"({"prompt":"x"})").http_status, 400);
  EXPECT_EQ(refused(Route::kTokenize, R"({"model":"other","prompt":"x"})").param, "model");
}

TEST_F(InputProcessorTest, TokenizeAndDetokenizeReply) {
  const InputProcessor input = make(/*max_model_len=*/32);
  const PreparedRequest t = input.prepare(Route::kTokenize, R"({"prompt":"hello"})");
  ASSERT_FALSE(t.error);
  const nlohmann::json reply = nlohmann::json::parse(t.reply);
  const std::vector<int32_t> ids = testing::fixture_tokenizer().encode("hello", true);
  EXPECT_EQ(reply["tokens"].get<std::vector<int32_t>>(), ids);
  EXPECT_EQ(reply["count"], ids.size());
  EXPECT_EQ(reply["max_model_len"], 32);
  const PreparedRequest d = input.prepare(Route::kDetokenize, nlohmann::json{{"tokens", ids}}.dump());
  ASSERT_FALSE(d.error);
  EXPECT_EQ(nlohmann::json::parse(d.reply)["prompt"], testing::fixture_tokenizer().decode(ids));
}

// --seed: requests without a seed get a fixed sequence (the same from a fresh processor), one
// with a seed keeps it.
TEST_F(InputProcessorTest, SeedsOfRequestsWithoutOne) {
  const auto seeds = [&](const InputProcessor& input) {
    std::vector<uint64_t> out;
    for (int i = 0; i < 3; ++i)
      out.push_back(input.prepare(Route::kCompletions, R"({"prompt":[1]})").engine_request.sampling.seed);
    return out;
  };
  const InputProcessor a = make(64, 7), b = make(64, 7), c = make(64, 8);
  const std::vector<uint64_t> first = seeds(a);
  EXPECT_EQ(first, seeds(b));
  EXPECT_NE(first, seeds(c));
  EXPECT_NE(first[0], first[1]);
  EXPECT_EQ(a.prepare(Route::kCompletions, R"({"prompt":[1],"seed":5})").engine_request.sampling.seed, 5u);
}

}  // namespace
}  // namespace crosspoint
