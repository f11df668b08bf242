// SmolLM2-135M-Instruct (the default model, converted to fp16 by `crosspoint convert`)
// against llama.cpp's greedy continuations (tests/fixtures/model/make_llamacpp_greedy.py).
// Skipped with a message when the setup script has not converted the default model yet.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "common/paths.h"
#include "test_assets.h"
#include "model_test_util.h"
#include "tensor_parallel_test_util.h"

namespace crosspoint {
namespace {

using testing::BatchBuilder;

constexpr size_t kMinMatchingTokens = 32;
constexpr const char* kFixtureHelp =
    " is a committed fixture; regenerate it with tests/fixtures/model/make_llamacpp_greedy.py "
    "(llama-cpp-python installed)";

struct LlamaCppSequence {
  std::string prompt;
  std::vector<int32_t> prompt_ids, generated_ids;
  std::vector<double> margins;  // the peer's top1 - top2 logit at each step
  // llama.cpp fixtures only: at each step the peer's best token ids and their logits.
  std::vector<std::vector<int32_t>> top_ids;
  std::vector<std::vector<double>> top_logits;
};

std::vector<LlamaCppSequence> load_llamacpp(const std::string& file_name) {
  std::ifstream in(testing::model_fixture_dir("smollm2_llamacpp") + "/" + file_name);
  if (!in) return {};
  const auto j = nlohmann::json::parse(in);
  std::vector<LlamaCppSequence> seqs;
  for (const auto& s : j["sequences"]) {
    seqs.push_back({s["prompt"], s["prompt_ids"], s["generated_ids"], s["top1_minus_top2_logit"], {}, {}});
    if (s.contains("top_ids")) {
      seqs.back().top_ids = s["top_ids"].get<std::vector<std::vector<int32_t>>>();
      seqs.back().top_logits = s["top_logits"].get<std::vector<std::vector<double>>>();
    }
  }
  return seqs;
}

// How a llama.cpp run may differ from ours. crosspoint runs the GGUF's weights dequantised
// to f16 with f32 activations; llama.cpp multiplies its stored blocks (Q4_1 / Q8_0, or F16)
// by activations it first rounds to 8-bit blocks (Q8_1 / Q8_0) or to f16. So logits differ
// by a small noise, and a greedy continuation may legitimately take the other branch where
// the peer's top-two margin is inside that noise. A margin above kDecisiveMargin is outside
// it: there the argmax must agree.
struct PeerTolerance {
  double logit_abs;        // max |our logit - peer logit| over the peer's recorded top tokens
  double decisive_margin;  // the peer's top1-top2 gap above which our argmax must agree
  bool whole_prefix;       // free-running greedy must match the first 32 tokens outright,
                           // not only up to the peer's first indecisive step
};
// Measured on the committed fixtures (docs/performance.md, "Agreement with llama.cpp"):
// Q4_1 (llama.cpp rounds activations to Q8_1 blocks): max |logit diff| 0.92 over 3 x 40
//   steps x 8 tokens; our argmax equals llama.cpp's at all 104 steps whose margin is >= 0.5;
//   free-running sequences part at its near-ties (steps 5, 13 and never), as transformers'
//   fp32 run does too. Tolerance 1.25 logits.
// F16 (the same dequantised weights; llama.cpp rounds activations to f16): max diff 0.042;
//   the greedy continuations equal ours for every token (30 with eos, 40, 40), so the
//   issue's criterion (first 32 tokens identical) holds outright. Tolerance 0.1 logits.
constexpr PeerTolerance kQ41Tolerance{1.25, 0.5, false};
constexpr PeerTolerance kF16Tolerance{0.1, 0.1, true};

// Tokens until the first difference.
size_t matching_prefix(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  return i;
}

class SmolLM2VsLlamaCpp : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = default_model_dir();
    if (!std::filesystem::exists(dir_ + "/model.safetensors")) return;  // each test says so in SetUp
    auto model = Model::load(dir_);
    ASSERT_TRUE(model.is_ok()) << model.status().to_string();
    model_ = std::move(model).value().release();
  }
  static void TearDownTestSuite() {
    delete model_;
    model_ = nullptr;
  }
  void SetUp() override {
    CROSSPOINT_REQUIRE_ASSET(dir_ + "/model.safetensors");
    ASSERT_NE(model_, nullptr) << dir_ << ": the default model did not load";
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

  // Teacher-forced logits of prompt + continuation[:-1]: [continuation.size(), vocab] f32,
  // row t predicting continuation[t].
  std::vector<float> teacher_forced_logits(const std::vector<int32_t>& prompt,
                                           const std::vector<int32_t>& continuation) {
    std::vector<int32_t> tokens = prompt;
    tokens.insert(tokens.end(), continuation.begin(), continuation.end() - 1);
    const int64_t vocab = model_->vocab_size();
    CpuKvCache cache(model_->kv_cache_shape(8, 16));
    BatchBuilder builder(1, 8, 16);
    std::vector<float> logits(tokens.size() * vocab);  // [tokens, vocab]: every position's logits
    EXPECT_TRUE(model_->forward(builder.build({{0, tokens}}, true), cache, logits.data()).is_ok());
    logits.erase(logits.begin(), logits.begin() + static_cast<int64_t>((prompt.size() - 1) * vocab));
    return logits;
  }

  void check_against_peer(const std::vector<LlamaCppSequence>& seqs, const PeerTolerance& tol,
                          const std::string& peer) {
    const int64_t vocab = model_->vocab_size();
    for (const auto& s : seqs) {
      ASSERT_FALSE(s.top_ids.empty()) << peer << " fixture has no top_ids: regenerate it";
      ASSERT_EQ(s.top_ids.size(), s.generated_ids.size());
      const std::vector<float> logits = teacher_forced_logits(s.prompt_ids, s.generated_ids);
      double worst = 0.0;
      size_t worst_step = 0, first_indecisive = s.generated_ids.size();
      for (size_t t = 0; t < s.generated_ids.size(); ++t) {
        const float* row = logits.data() + t * vocab;
        for (size_t r = 0; r < s.top_ids[t].size(); ++r) {
          const double diff = std::abs(row[s.top_ids[t][r]] - s.top_logits[t][r]);
          if (diff > worst) worst = diff, worst_step = t;
        }
        const int32_t ours = static_cast<int32_t>(std::max_element(row, row + vocab) - row);
        if (s.margins[t] < tol.decisive_margin) {
          first_indecisive = std::min(first_indecisive, t);
          continue;
        }
        EXPECT_EQ(ours, s.generated_ids[t]) << "prompt '" << s.prompt << "' step " << t << ": " << peer
                                            << " is sure (margin " << s.margins[t] << ") and we disagree";
      }
      EXPECT_LE(worst, tol.logit_abs) << "prompt '" << s.prompt << "': logits differ from " << peer << " by " << worst
                                      << " at step " << worst_step;
      const size_t needed = std::min(kMinMatchingTokens, tol.whole_prefix ? s.generated_ids.size() : first_indecisive);
      const auto free_running = greedy(s.prompt_ids, needed);
      const size_t same = matching_prefix(free_running, s.generated_ids);
      EXPECT_GE(same, needed) << "prompt '" << s.prompt << "' diverges from " << peer << " at token " << same
                              << " before its first near-tie (step " << first_indecisive << ")";
      std::printf(
          "[ %s ] '%s': max |logit diff| %.3f over its top %zu tokens; greedy equal for %zu of %zu "
          "tokens asked; first margin < %.2f at step %zu of %zu\n",
          peer.c_str(), s.prompt.c_str(), worst, s.top_ids[0].size(), same, needed, tol.decisive_margin,
          first_indecisive, s.generated_ids.size());
    }
  }

  static inline std::string dir_;
  static inline Model* model_ = nullptr;
};

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

// The real weights split over 3 ranks (9 heads and 3 KV heads allow 1 and 3 only): transformers'
// greedy tokens through the split, and its logits within fp32 rounding of the whole model's.
TEST_F(SmolLM2VsLlamaCpp, SplitOverThreeRanksMatchesTheWholeModel) {
  const auto seqs = load_llamacpp("greedy_transformers.json");
  ASSERT_FALSE(seqs.empty()) << "fixture smollm2_llamacpp/greedy_transformers.json missing";
  auto tp = TensorParallelModel::create(*model_, 3);
  ASSERT_TRUE(tp.is_ok()) << tp.status().to_string();
  EXPECT_FALSE(TensorParallelModel::create(*model_, 2).is_ok());
  const std::vector<int32_t>& prompt = seqs[0].prompt_ids;
  const int64_t V = model_->vocab_size(), n = static_cast<int64_t>(prompt.size());
  CpuKvCache whole_cache(model_->kv_cache_shape(16, 16)), split_cache((*tp)->kv_cache_shape(16, 16, DType::kF32));
  BatchBuilder whole_builder(1, 16, 16), split_builder(1, 16, 16);
  std::vector<float> whole(n * V), split(n * V);
  ASSERT_TRUE(model_->forward(whole_builder.build({{0, prompt}}, true), whole_cache, whole.data()).is_ok());
  ASSERT_TRUE((*tp)->forward(split_builder.build({{0, prompt}}, true), split_cache, split.data()).is_ok());
  const float difference = testing::relative_difference(whole, split);
  std::printf("[ split    ] SmolLM2 over 3 ranks: max |whole - split| / (1 + max |whole|) = %.2e\n", difference);
  EXPECT_LE(difference, 2e-5f);
  // Then greedy decoding through the split, against transformers' first tokens.
  std::vector<int32_t> ours;
  std::vector<float> logits(V);
  const float* last = split.data() + (n - 1) * V;
  while (ours.size() < 8) {
    const int32_t best = static_cast<int32_t>(std::max_element(last, last + V) - last);
    ours.push_back(best);
    ASSERT_TRUE((*tp)->forward(split_builder.build({{0, {best}}}, false), split_cache, logits.data()).is_ok());
    last = logits.data();
  }
  EXPECT_EQ(matching_prefix(ours, seqs[0].generated_ids), ours.size());
}

// Teacher-forced on the peer's own continuation (so one early near-tie does not hide the
// rest): at every step our logits of the peer's recorded top tokens are within
// tol.logit_abs of its logits, and our argmax is its token wherever its margin is decisive.
// Free-running: our greedy continuation equals the peer's for the first 32 tokens
// (whole_prefix) or at least up to its first step with an indecisive margin.
TEST_F(SmolLM2VsLlamaCpp, LogitsAndGreedyAgreeWithLlamaCppQ41) {
  const auto seqs = load_llamacpp("greedy_q4_1.json");
  ASSERT_FALSE(seqs.empty()) << "smollm2_llamacpp/greedy_q4_1.json" << kFixtureHelp;
  check_against_peer(seqs, kQ41Tolerance, "llama.cpp Q4_1");
}

TEST_F(SmolLM2VsLlamaCpp, LogitsAndGreedyAgreeWithLlamaCppF16) {
  const auto seqs = load_llamacpp("greedy_f16.json");
  ASSERT_FALSE(seqs.empty()) << "smollm2_llamacpp/greedy_f16.json" << kFixtureHelp;
  check_against_peer(seqs, kF16Tolerance, "llama.cpp F16");
}

TEST_F(SmolLM2VsLlamaCpp, GenerateCommandStreamsTheSameTokens) {
  const auto seqs = load_llamacpp("greedy_transformers.json");
  ASSERT_FALSE(seqs.empty()) << "fixture smollm2_llamacpp/greedy_transformers.json missing";
  const auto& s = seqs[0];
  const std::string cmd = std::string(CROSSPOINT_BINARY) +
                          " generate --device cpu --model default --max-tokens 32 --ids --prompt '" + s.prompt +
                          "' 2>/dev/null";
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
