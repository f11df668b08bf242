// vLLM's custom, sonnet and burstgpt datasets on small fixtures: CPython's shuffle and
// choices, numpy's RandomState picks (the values below were printed by CPython 3 and numpy
// 2.4), the chat template, lengths, and the files' errors.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>

#include "bench/burstgpt_dataset.h"
#include "bench/custom_dataset.h"
#include "bench/sonnet_dataset.h"
#include "bench_test_util.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace crosspoint::bench {
namespace {

const Tokenizer& tiny_tokenizer() {
  static const auto tokenizer = Tokenizer::from_model_dir(testing::fixture_path("tiny_tokenizer")).value();
  return *tokenizer;
}

ChatTemplate chatml() { return chat_template_for_model_dir(testing::fixture_path("tiny_tokenizer")); }

std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = (std::filesystem::temp_directory_path() / name).string();
  std::ofstream(path) << text;
  return path;
}

TEST(CustomDataset, ShuffledAsCPythonAndWrappedInTheChatTemplate) {
  auto prompts = load_custom_prompts(testing::fixture_path("custom_prompts.jsonl"));
  ASSERT_TRUE(prompts.is_ok()) << prompts.status().to_string();
  ASSERT_EQ(prompts->size(), 6u);
  EXPECT_EQ((*prompts)[0], "What is the capital of India?");
  CustomSampling s;
  s.num_requests = 6;
  s.output_len = 17;
  s.skip_chat_template = true;
  auto samples = sample_custom(*prompts, tiny_tokenizer(), chatml(), s);
  ASSERT_TRUE(samples.is_ok());
  // random.seed(0); random.shuffle(list(range(6))) == [4, 2, 1, 0, 5, 3]
  const int order[] = {4, 2, 1, 0, 5, 3};
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ((*samples)[i].prompt, (*prompts)[order[i]]) << i;
    EXPECT_EQ((*samples)[i].expected_output_len, 17);
    EXPECT_EQ((*samples)[i].prompt_len, count_prompt_tokens(tiny_tokenizer(), (*prompts)[order[i]]));
  }
  s.seed = 7;  // [4, 0, 5, 3, 1, 2]
  EXPECT_EQ(sample_custom(*prompts, tiny_tokenizer(), chatml(), s)->at(1).prompt, (*prompts)[0]);
  s.disable_shuffle = true;
  EXPECT_EQ(sample_custom(*prompts, tiny_tokenizer(), chatml(), s)->at(1).prompt, (*prompts)[1]);
  // With the template (the tiny tokenizer has none: ChatML), the prompt is one user turn.
  s.skip_chat_template = false;
  samples = sample_custom(*prompts, tiny_tokenizer(), chatml(), s);
  ASSERT_TRUE(samples.is_ok());
  EXPECT_EQ((*samples)[0].prompt, "<|im_start|>user\nWhat is the capital of India?<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ((*samples)[0].prompt_len, count_prompt_tokens(tiny_tokenizer(), (*samples)[0].prompt));
}

TEST(CustomDataset, TooFewRowsAreOversampledWithRandomChoices) {
  std::vector<std::string> prompts = {"a b", "c d", "e f", "g h"};
  CustomSampling s;
  s.num_requests = 7;
  s.skip_chat_template = true;
  s.disable_shuffle = true;
  auto samples = sample_custom(prompts, tiny_tokenizer(), chatml(), s);
  ASSERT_TRUE(samples.is_ok());
  ASSERT_EQ(samples->size(), 7u);
  // random.seed(0); random.choices(range(4), k=3) == [3, 3, 1]
  EXPECT_EQ((*samples)[4].prompt, "g h");
  EXPECT_EQ((*samples)[5].prompt, "g h");
  EXPECT_EQ((*samples)[6].prompt, "c d");
  s.no_oversample = true;
  EXPECT_EQ(sample_custom(prompts, tiny_tokenizer(), chatml(), s)->size(), 4u);
  s.num_requests = 2;
  EXPECT_EQ(sample_custom(prompts, tiny_tokenizer(), chatml(), s)->size(), 2u);
}

TEST(CustomDataset, FileErrorsNameTheLine) {
  auto bad = load_custom_prompts(write_temp("bench_custom_bad.jsonl", "{\"prompt\": \"ok\"}\n{\"text\": \"x\"}\n"));
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("bench_custom_bad.jsonl:2"), std::string::npos) << bad.status().to_string();
  EXPECT_FALSE(load_custom_prompts(write_temp("bench_custom.json", "{\"prompt\": \"ok\"}\n")).is_ok());
  EXPECT_FALSE(load_custom_prompts(write_temp("bench_custom_junk.jsonl", "not json\n")).is_ok());
}

TEST(SonnetDataset, PromptsShareThePrefixAndFitTheInputLength) {
  auto lines = load_poem_lines(testing::fixture_path("sonnets_small.txt"));
  ASSERT_TRUE(lines.is_ok());
  ASSERT_EQ(lines->size(), 42u);
  EXPECT_EQ(lines->front(), "FROM fairest creatures we desire increase,\n");
  SonnetSampling s;
  s.num_requests = 20;
  s.input_len = 320;  // the tiny tokenizer: the base prompt is 54 tokens, a line 22 on average
  s.prefix_len = 120;
  s.output_len = 9;
  auto samples = sample_sonnet(*lines, tiny_tokenizer(), chatml(), s);
  ASSERT_TRUE(samples.is_ok()) << samples.status().to_string();
  ASSERT_EQ(samples->size(), 20u);
  // The shared prefix: the base prompt and the file's first lines, as many as about
  // prefix_len - base tokens by the lines' mean length.
  double total = 0;
  for (const auto& line : *lines) total += count_prompt_tokens(tiny_tokenizer(), line);
  const double avg = total / lines->size();
  const int base = count_prompt_tokens(
      tiny_tokenizer(), render_user_prompt(chatml(), "Pick as many lines as you can from these poem lines:\n").value());
  const int num_prefix_lines = static_cast<int>(std::nearbyint((s.prefix_len - base) / avg));
  ASSERT_GT(num_prefix_lines, 0) << "base " << base << " avg " << avg;
  std::string prefix = "Pick as many lines as you can from these poem lines:\n";
  for (int i = 0; i < num_prefix_lines; ++i) prefix += (*lines)[i];
  std::set<std::string> distinct;
  for (const SampleRequest& r : *samples) {
    EXPECT_EQ(r.prompt.rfind("<|im_start|>user\n" + prefix, 0), 0u) << r.prompt.substr(0, 200);
    EXPECT_LE(r.prompt_len, s.input_len);
    EXPECT_EQ(r.prompt_len, count_prompt_tokens(tiny_tokenizer(), r.prompt));
    EXPECT_EQ(r.expected_output_len, 9);
    distinct.insert(r.prompt);
  }
  EXPECT_GT(distinct.size(), 10u);  // the drawn lines differ
  // Chat endpoint: the same draw, sent without the template; the length still counts it.
  s.send_formatted = false;
  auto chat = sample_sonnet(*lines, tiny_tokenizer(), chatml(), s);
  ASSERT_TRUE(chat.is_ok());
  EXPECT_EQ((*chat)[3].prompt.rfind(prefix, 0), 0u);
  EXPECT_EQ((*chat)[3].prompt_len, (*samples)[3].prompt_len);
  EXPECT_EQ(render_user_prompt(chatml(), (*chat)[3].prompt).value(), (*samples)[3].prompt);
  s.input_len = 5;  // below the base prompt's length
  EXPECT_FALSE(sample_sonnet(*lines, tiny_tokenizer(), chatml(), s).is_ok());
}

TEST(BurstGptDataset, NumpyRandomStatePicks) {
  // numpy.random.RandomState(0).permutation(10) and RandomState(3).randint(0, 7, size=12).
  EXPECT_EQ(numpy_sample_indices(10, 10, 0), (std::vector<size_t>{2, 8, 4, 9, 1, 6, 7, 3, 0, 5}));
  EXPECT_EQ(numpy_sample_indices(7, 4, 0), (std::vector<size_t>{6, 2, 1, 3}));
  EXPECT_EQ(numpy_sample_indices(7, 12, 3), (std::vector<size_t>{2, 0, 1, 3, 0, 0, 0, 5, 5, 3, 2, 3}));
}

TEST(BurstGptDataset, Gpt4RowsWithAResponse) {
  auto rows = load_burstgpt_rows(testing::fixture_path("burstgpt_small.csv"));
  ASSERT_TRUE(rows.is_ok()) << rows.status().to_string();
  // GPT-4 rows with Response tokens > 0, in file order.
  const std::vector<std::pair<int, int>> expected = {{417, 276}, {55, 9}, {37, 512}, {802, 41}, {12, 120}, {260, 64}};
  ASSERT_EQ(rows->size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ((*rows)[i].request_tokens, expected[i].first);
    EXPECT_EQ((*rows)[i].response_tokens, expected[i].second);
  }
  const auto samples = sample_burstgpt(*rows, tiny_tokenizer(), 4, 0);
  ASSERT_EQ(samples.size(), 4u);
  // RandomState(0).permutation(6)[:4] == [5, 2, 1, 3]
  const int picks[] = {5, 2, 1, 3};
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(samples[i].prompt_len, expected[picks[i]].first) << i;
    EXPECT_EQ(samples[i].expected_output_len, expected[picks[i]].second) << i;
  }
  // Request 1's prompt: ids 1, 2, ... decoded.
  std::vector<int32_t> ids;
  for (int j = 0; j < expected[2].first; ++j) ids.push_back((1 + j) % tiny_tokenizer().vocab_size());
  EXPECT_EQ(samples[1].prompt, tiny_tokenizer().decode(ids));
  EXPECT_EQ(sample_burstgpt(*rows, tiny_tokenizer(), 9, 0).size(), 9u);  // more than the rows: with replacement
}

TEST(BurstGptDataset, WrongFileIsNamed) {
  auto bad = load_burstgpt_rows(write_temp("bench_not_burstgpt.csv", "a,b,c\n1,2,3\n"));
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("Response tokens"), std::string::npos);
  EXPECT_FALSE(load_burstgpt_rows(write_temp("bench_burstgpt_nan.csv",
                                             "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
                                             "1,GPT-4,x,3,3,API log\n"))
                   .is_ok());
}

}  // namespace
}  // namespace crosspoint::bench
