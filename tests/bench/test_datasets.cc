// ShareGPT sampling against vLLM's rules run in Python with CPython's random and HF
// tokenizers (sharegpt_expected.json), on a small cut of the real file; the random dataset's
// lengths; the prefix-repetition prompts; file errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>

#include "bench/multi_turn_dataset.h"
#include "bench/random_dataset.h"
#include "bench/sharegpt_dataset.h"
#include "bench_test_util.h"
#include "tokenizer/tokenizer.h"

namespace crosspoint::bench {
namespace {

std::unique_ptr<Tokenizer> tiny_tokenizer() {
  auto tokenizer = Tokenizer::from_model_dir(testing::fixture_path("tiny_tokenizer"));
  EXPECT_TRUE(tokenizer.is_ok()) << tokenizer.status().to_string();
  return tokenizer.is_ok() ? std::move(tokenizer).value() : nullptr;
}

TEST(ShareGpt, LoadsTwoTurnEntriesAndToleratesACutFile) {
  auto full = load_sharegpt_file(testing::fixture_path("sharegpt_small.json"));
  ASSERT_TRUE(full.is_ok()) << full.status().to_string();
  EXPECT_FALSE(full->truncated);
  EXPECT_EQ(full->conversations.size(), 40u);  // the 3 entries without two turns are dropped
  auto cut = load_sharegpt_file(testing::fixture_path("sharegpt_truncated.json"));
  ASSERT_TRUE(cut.is_ok()) << cut.status().to_string();
  EXPECT_TRUE(cut->truncated);
  EXPECT_EQ(cut->conversations.size(), 27u);
  for (size_t i = 0; i < cut->conversations.size(); ++i) EXPECT_EQ(cut->conversations[i], full->conversations[i]);
}

TEST(ShareGpt, KeepsEveryTurnWhenAskedInTheSameOrder) {
  auto full = load_sharegpt_file(testing::fixture_path("sharegpt_small.json"), /*keep_all_turns=*/true);
  ASSERT_TRUE(full.is_ok()) << full.status().to_string();
  ASSERT_EQ(full->dialogues.size(), full->conversations.size());
  for (size_t i = 0; i < full->dialogues.size(); ++i) {
    ASSERT_GE(full->dialogues[i].size(), 2u);
    EXPECT_EQ(full->dialogues[i][0].text, full->conversations[i].first);
    EXPECT_EQ(full->dialogues[i][1].text, full->conversations[i].second);
    EXPECT_FALSE(full->dialogues[i][0].from.empty());
  }
  EXPECT_TRUE(load_sharegpt_file(testing::fixture_path("sharegpt_small.json"))->dialogues.empty());
}

TEST(MultiTurnDataset, KeepsAlternatingTurnsWithinTheLimits) {
  auto tokenizer = tiny_tokenizer();
  ASSERT_NE(tokenizer, nullptr);
  const std::string user = "please tell me more about the weather in the mountains today";
  const std::string reply = "the weather in the mountains is cold and windy with some snow";
  auto turns = [&](std::vector<std::string> from) {
    std::vector<ShareGptTurn> t;
    for (const std::string& f : from) t.push_back({f, f == "human" ? user : reply});
    return t;
  };
  std::vector<std::vector<ShareGptTurn>> dialogues = {
      turns({"human", "gpt", "human", "gpt", "human", "gpt", "human", "gpt"}),  // 4 pairs
      turns({"gpt", "human", "gpt", "human"}),                                  // starts with the model
      turns({"human", "gpt"}),                                                  // one pair only
      turns({"human", "gpt", "human", "human", "gpt"}),                         // breaks after one pair
  };
  dialogues.push_back(turns({"human", "gpt", "human", "gpt"}));
  dialogues.back()[2].text = "ok";  // a second user turn under 4 tokens
  MultiTurnSampling s;
  s.num_conversations = 3;
  s.max_turns = 3;
  s.seed = 1;
  DatasetSummary summary;
  const std::vector<Conversation> sample = sample_multi_turn(dialogues, *tokenizer, s, &summary);
  // Only the first dialogue qualifies; it is repeated to make three conversations.
  ASSERT_EQ(sample.size(), 3u);
  EXPECT_EQ(summary.num_entries_scanned, 5);
  EXPECT_EQ(summary.num_oversampled, 2);
  const int user_len = count_prompt_tokens(*tokenizer, user);
  const int reply_len = count_prompt_tokens(*tokenizer, reply);
  for (const Conversation& c : sample) {
    ASSERT_EQ(c.turns.size(), 3u);  // max_turns
    EXPECT_EQ(c.turns[1].prompt, user);
    EXPECT_EQ(c.turns[1].prompt_len, user_len);
    EXPECT_EQ(c.turns[1].expected_output_len, reply_len);
  }
  // The context limit stops a conversation before the pair that would cross it.
  s.max_context_tokens = 2 * (user_len + reply_len) + 1;
  s.max_turns = 8;
  const std::vector<Conversation> short_sample = sample_multi_turn(dialogues, *tokenizer, s, nullptr);
  ASSERT_FALSE(short_sample.empty());
  EXPECT_EQ(short_sample[0].turns.size(), 2u);
  s.fixed_output_len = 7;
  EXPECT_EQ(sample_multi_turn(dialogues, *tokenizer, s, nullptr)[0].turns[0].expected_output_len, 7);
}

TEST(ShareGpt, SampleMatchesVllmRulesInPython) {
  auto tokenizer = tiny_tokenizer();
  ASSERT_NE(tokenizer, nullptr);
  const nlohmann::json cases = testing::load_fixture_json("sharegpt_expected.json");
  for (const auto& c : cases) {
    const std::string file = c["file"].get<std::string>();
    SCOPED_TRACE(file + " seed " + std::to_string(c["seed"].get<int>()) + " n " +
                 std::to_string(c["num_requests"].get<int>()));
    auto loaded = load_sharegpt_file(testing::fixture_path(file));
    ASSERT_TRUE(loaded.is_ok());
    ASSERT_EQ(static_cast<int>(loaded->conversations.size()), c["num_entries"].get<int>());
    const auto conversations = loaded->conversations;
    ShareGptSampling sampling;
    sampling.num_requests = c["num_requests"].get<int>();
    sampling.seed = c["seed"].get<uint64_t>();
    if (!c["fixed_output_len"].is_null()) sampling.fixed_output_len = c["fixed_output_len"].get<int>();
    DatasetSummary summary;
    const auto samples = sample_sharegpt(loaded->conversations, *tokenizer, sampling, &summary);
    const auto& expected = c["expected"];
    ASSERT_EQ(samples.size(), expected.size());
    for (size_t i = 0; i < samples.size(); ++i) {
      const int index = expected[i][0].get<int>();
      EXPECT_EQ(samples[i].prompt, conversations[index].first) << "sample " << i;
      EXPECT_EQ(samples[i].prompt_len, expected[i][1].get<int>()) << "sample " << i;
      EXPECT_EQ(samples[i].expected_output_len, expected[i][2].get<int>()) << "sample " << i;
    }
  }
}

// A tokenizer whose post-processor adds a start-of-sequence token (Llama 3's shape): vLLM
// counts it in every prompt and reply, and its length filters see one token more.
TEST(ShareGpt, CountsTheStartOfSequenceTokenAsVllmDoes) {
  auto tokenizer = Tokenizer::from_model_dir(testing::fixture_path("bos_tokenizer"));
  ASSERT_TRUE(tokenizer.is_ok()) << tokenizer.status().to_string();
  EXPECT_EQ((*tokenizer)->num_added_special_tokens(), 1);
  EXPECT_EQ(tiny_tokenizer()->num_added_special_tokens(), 0);
  const nlohmann::json cases = testing::load_fixture_json("sharegpt_expected_bos.json");
  for (const auto& c : cases) {
    SCOPED_TRACE("seed " + std::to_string(c["seed"].get<int>()) + " n " + std::to_string(c["num_requests"].get<int>()));
    auto loaded = load_sharegpt_file(testing::fixture_path(c["file"].get<std::string>()));
    ASSERT_TRUE(loaded.is_ok());
    ShareGptSampling sampling;
    sampling.num_requests = c["num_requests"].get<int>();
    sampling.seed = c["seed"].get<uint64_t>();
    if (!c["fixed_output_len"].is_null()) sampling.fixed_output_len = c["fixed_output_len"].get<int>();
    DatasetSummary summary;
    const auto samples = sample_sharegpt(loaded->conversations, **tokenizer, sampling, &summary);
    const auto& expected = c["expected"];
    ASSERT_EQ(samples.size(), expected.size());
    for (size_t i = 0; i < samples.size(); ++i) {
      EXPECT_EQ(samples[i].prompt, loaded->conversations[expected[i][0].get<int>()].first) << "sample " << i;
      EXPECT_EQ(samples[i].prompt_len, expected[i][1].get<int>()) << "sample " << i;
      EXPECT_EQ(samples[i].expected_output_len, expected[i][2].get<int>()) << "sample " << i;
    }
  }
}

TEST(ShareGpt, ClearErrors) {
  auto missing = load_sharegpt_file("/nonexistent/sharegpt.json");
  ASSERT_FALSE(missing.is_ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("/nonexistent/sharegpt.json"), std::string::npos);

  const std::string bad_path = ::testing::TempDir() + "/bench_bad_sharegpt.json";
  {
    std::ofstream out(bad_path);
    out << R"([{"conversations": [{"value": "a"}, {"value": "b"}]}, {"conversations": ]] extra)";
  }
  auto bad = load_sharegpt_file(bad_path);
  ASSERT_FALSE(bad.is_ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kCorrupt);
  {
    std::ofstream out(bad_path);
    out << R"({"conversations": []})";
  }
  EXPECT_FALSE(load_sharegpt_file(bad_path).is_ok());
}

TEST(RandomDataset, LengthsWithinRangeAndCountedByTheTokenizer) {
  auto tokenizer = tiny_tokenizer();
  ASSERT_NE(tokenizer, nullptr);
  RandomSampling s;
  s.num_requests = 25;
  s.input_len = 37;
  s.output_len = 9;
  s.range_ratio = 0.3;
  s.seed = 11;
  const auto samples = sample_random(*tokenizer, s);
  ASSERT_EQ(samples.size(), 25u);
  for (const auto& sample : samples) {
    EXPECT_GE(sample.expected_output_len, 6);   // floor(9 * 0.7)
    EXPECT_LE(sample.expected_output_len, 12);  // ceil(9 * 1.3)
    EXPECT_EQ(sample.prompt_len, static_cast<int>(tokenizer->encode(sample.prompt, false).size()));
    // [floor(37 * 0.7), ceil(37 * 1.3)], give or take what re-tokenisation cannot fix
    EXPECT_GE(sample.prompt_len, 25 - 3);
    EXPECT_LE(sample.prompt_len, 49 + 3);
  }
  const auto again = sample_random(*tokenizer, s);
  EXPECT_EQ(again[3].prompt, samples[3].prompt);
}

TEST(PrefixRepetitionDataset, PromptsShareTheirPrefixes) {
  auto tokenizer = tiny_tokenizer();
  ASSERT_NE(tokenizer, nullptr);
  PrefixRepetitionSampling s;
  s.num_requests = 14;
  s.prefix_len = 40;
  s.suffix_len = 12;
  s.num_prefixes = 3;
  s.output_len = 7;
  s.seed = 5;
  const auto samples = sample_prefix_repetition(*tokenizer, s);
  ASSERT_EQ(samples.size(), 14u);
  // Group the prompts by their first 32 tokens: three groups of 5, 5 and 4 (14 / 3).
  std::map<std::vector<int32_t>, int> groups;
  for (const auto& sample : samples) {
    EXPECT_EQ(sample.expected_output_len, 7);
    EXPECT_EQ(sample.prompt_len, static_cast<int>(tokenizer->encode(sample.prompt, false).size()));
    EXPECT_GE(sample.prompt_len, 40 + 12 - 6);  // what re-tokenisation at the seam can change
    EXPECT_LE(sample.prompt_len, 40 + 12 + 6);
    const std::vector<int32_t> ids = tokenizer->encode(sample.prompt, false);
    ++groups[std::vector<int32_t>(ids.begin(), ids.begin() + std::min<size_t>(32, ids.size()))];
  }
  std::vector<int> sizes;
  for (const auto& [prefix, count] : groups) sizes.push_back(count);
  std::sort(sizes.begin(), sizes.end());
  EXPECT_EQ(sizes, (std::vector<int>{4, 5, 5}));
  EXPECT_EQ(sample_prefix_repetition(*tokenizer, s)[6].prompt, samples[6].prompt);  // the seed decides
}

}  // namespace
}  // namespace crosspoint::bench
