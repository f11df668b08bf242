// SmolLM2-135M-Instruct (the default model, converted to fp16 by `crosspoint convert`)
// against llama.cpp's greedy continuations (tests/fixtures/model/make_llamacpp_greedy.py).
// Skipped with a message when the setup script has not converted the default model yet.
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "common/paths.h"
#include "model_test_util.h"

namespace crosspoint {
namespace {

using testing::BatchBuilder;

constexpr size_t kMinMatchingTokens = 32;
constexpr const char* kNoFixture =
    "tests/fixtures/model/smollm2_llamacpp/greedy_q4_1.json not generated yet: run "
    "tests/fixtures/model/make_llamacpp_greedy.py with llama-cpp-python installed";

struct LlamaCppSequence {
  std::string prompt;
  std::vector<int32_t> prompt_ids, generated_ids;
  std::vector<double> margins;  // llama.cpp's top1 - top2 logit at each step
};

std::vector<LlamaCppSequence> load_llamacpp(const std::string& file_name) {
  std::ifstream in(testing::model_fixture_dir("smollm2_llamacpp") + "/" + file_name);
  if (!in) return {};
  const auto j = nlohmann::json::parse(in);
  std::vector<LlamaCppSequence> seqs;
  for (const auto& s : j["sequences"])
    seqs.push_back({s["prompt"], s["prompt_ids"], s["generated_ids"], s["top1_minus_top2_logit"]});
  return seqs;
}

class SmolLM2VsLlamaCpp : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = default_model_dir();
    if (!std::filesystem::exists(dir_ + "/model.safetensors")) return;
    auto model = Model::load(dir_);
    ASSERT_TRUE(model.is_ok()) << model.status().to_string();
    model_ = std::move(model).value().release();
  }
  static void TearDownTestSuite() { delete model_; model_ = nullptr; }
  void SetUp() override {
    if (model_ == nullptr) GTEST_SKIP() << "default model not converted yet (" << dir_ << "): run scripts/setup.sh";
  }

  // Greedy continuation through the model API; stops after n tokens or at an eos.
  std::vector<int32_t> greedy(const std::vector<int32_t>& prompt, size_t n) {
    CpuKvCache cache(model_->kv_cache_shape(16, 16));
    BatchBuilder builder(1, 16, 16);
    std::vector<float> logits(model_->vocab_size());
    std::vector<int32_t> out;
    EXPECT_TRUE(model_->forward(builder.build({{0, prompt}}, false), cache, logits.data()).is_ok());
    const auto& eos = model_->config().eos_token_ids;
    while (out.size() < n) {
      int32_t best = 0;
      for (int32_t i = 1; i < model_->vocab_size(); ++i)
        if (logits[i] > logits[best]) best = i;
      out.push_back(best);
      if (std::find(eos.begin(), eos.end(), best) != eos.end()) break;
      EXPECT_TRUE(model_->forward(builder.build({{0, {best}}}, false), cache, logits.data()).is_ok());
    }
    return out;
  }

  static inline std::string dir_;
  static inline Model* model_ = nullptr;
};

// Tokens until the first difference.
size_t matching_prefix(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  return i;
}

// transformers in fp32 on the very directory crosspoint loads (make_transformers_greedy.py).
TEST_F(SmolLM2VsLlamaCpp, GreedyMatchesTransformersOnTheConvertedWeights) {
  const auto seqs = load_llamacpp("greedy_transformers.json");
  ASSERT_EQ(seqs.size(), 3u) << "fixture smollm2_llamacpp/greedy_transformers.json missing";
  for (const auto& s : seqs) {
    // The first 32 tokens only: the test must stay fast on a 2-core machine.
    const auto ours = greedy(s.prompt_ids, std::min(kMinMatchingTokens, s.generated_ids.size()));
    const size_t same = matching_prefix(ours, s.generated_ids);
    EXPECT_GE(same, std::min(kMinMatchingTokens, s.generated_ids.size()))
        << "prompt '" << s.prompt << "' diverges at token " << same << " where transformers' top1-top2 margin is "
        << (same < s.margins.size() ? s.margins[same] : -1.0);
  }
}

TEST_F(SmolLM2VsLlamaCpp, GreedyMatchesLlamaCppQ41) {
  const auto seqs = load_llamacpp("greedy_q4_1.json");
  if (seqs.empty()) GTEST_SKIP() << kNoFixture;
  for (const auto& s : seqs) {
    const auto ours = greedy(s.prompt_ids, s.generated_ids.size());
    const size_t same = matching_prefix(ours, s.generated_ids);
    const size_t needed = std::min(kMinMatchingTokens, s.generated_ids.size());
    EXPECT_GE(same, needed) << "prompt '" << s.prompt << "' diverges at token " << same
                            << " where llama.cpp's top1-top2 margin is "
                            << (same < s.margins.size() ? s.margins[same] : -1.0);
  }
}

TEST_F(SmolLM2VsLlamaCpp, GenerateCommandStreamsTheSameTokens) {
  const auto seqs = load_llamacpp("greedy_transformers.json");
  ASSERT_FALSE(seqs.empty()) << "fixture smollm2_llamacpp/greedy_transformers.json missing";
  const auto& s = seqs[0];
  const std::string cmd = std::string(CROSSPOINT_BINARY) + " generate --model default --max-tokens 32 --ids --prompt '" +
                          s.prompt + "' 2>/dev/null";
  FILE* pipe = popen(cmd.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  std::array<char, 4096> buffer;
  while (size_t n = fread(buffer.data(), 1, buffer.size(), pipe)) output.append(buffer.data(), n);
  ASSERT_EQ(pclose(pipe), 0) << output;
  // Last line: the generated ids as JSON.
  const size_t last = output.rfind('[');
  ASSERT_NE(last, std::string::npos) << output;
  const auto ids = nlohmann::json::parse(output.substr(last)).get<std::vector<int32_t>>();
  const size_t n = std::min<size_t>(32, s.generated_ids.size());
  EXPECT_GE(matching_prefix(ids, s.generated_ids), n) << output;
}

}  // namespace
}  // namespace crosspoint
