// Logit bias, penalties and min-p against a peer: tests/fixtures/sampling/logits_processing.json,
// made by make_logits_processing.py next to it with transformers' RepetitionPenaltyLogitsProcessor,
// SequenceBiasLogitsProcessor, TemperatureLogitsWarper, MinPLogitsWarper, TopKLogitsWarper and
// TopPLogitsWarper, and vLLM's frequency/presence formula (transformers has none) in torch.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "runner/logits_processors.h"
#include "runner/request_sampler.h"

namespace crosspoint {
namespace {

using json = nlohmann::json;

json load_fixture() {
  std::ifstream in(std::string(CROSSPOINT_FIXTURES_DIR) + "/sampling/logits_processing.json");
  EXPECT_TRUE(in.good()) << "missing tests/fixtures/sampling/logits_processing.json";
  return json::parse(in);
}

RequestSamplingParams case_params(const json& c) {
  RequestSamplingParams p;
  p.repetition_penalty = c["repetition_penalty"].get<float>();
  p.frequency_penalty = c["frequency_penalty"].get<float>();
  p.presence_penalty = c["presence_penalty"].get<float>();
  for (const auto& [id, bias] : c["logit_bias"].items()) p.logit_bias.push_back({std::stoi(id), bias.get<float>()});
  p.temperature = c["temperature"].get<float>();
  p.min_p = c["min_p"].get<float>();
  p.top_k = c["top_k"].get<int32_t>();
  p.top_p = c["top_p"].get<float>();
  return p;
}

TEST(LogitsProcessors, ProcessedLogitsEqualThePeers) {
  const json fixture = load_fixture();
  ASSERT_GE(fixture["cases"].size(), 10u);
  for (const auto& c : fixture["cases"]) {
    SCOPED_TRACE(c["name"].get<std::string>());
    std::vector<float> logits = c["logits"].get<std::vector<float>>();
    const auto prompt = c["prompt_token_ids"].get<std::vector<int32_t>>();
    const auto output = c["output_token_ids"].get<std::vector<int32_t>>();
    const auto want = c["processed_logits"].get<std::vector<double>>();
    apply_logits_processors(logits, case_params(c), prompt, output);
    ASSERT_EQ(logits.size(), want.size());
    for (size_t v = 0; v < want.size(); ++v) {
      // fp32 on both sides; only a fused multiply-add may round differently.
      EXPECT_NEAR(logits[v], want[v], 1e-5 * std::max(1.0, std::fabs(want[v]))) << "token " << v;
    }
  }
}

// The whole chain (processing, temperature, min-p, top-k, top-p, draw): for uniform numbers on a
// grid, the drawn token must be the one the peer's distribution gives when its kept tokens are
// walked from most to least likely (the sampler's order), skipping numbers within 1e-6 of a cut.
TEST(LogitsProcessors, DrawsFollowThePeersDistribution) {
  const json fixture = load_fixture();
  for (const auto& c : fixture["cases"]) {
    SCOPED_TRACE(c["name"].get<std::string>());
    const std::vector<float> logits = c["logits"].get<std::vector<float>>();
    const auto prompt = c["prompt_token_ids"].get<std::vector<int32_t>>();
    const auto output = c["output_token_ids"].get<std::vector<int32_t>>();
    const auto probs = c["probs"].get<std::vector<double>>();
    const RequestSamplingParams params = case_params(c);
    std::vector<int32_t> order(probs.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int32_t>(i);
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return probs[a] > probs[b]; });
    int checked = 0;
    for (int step = 0; step < 1000; ++step) {
      const double u = (step + 0.5) / 1000.0;
      double cumulative = 0.0;
      int32_t want = -1;
      bool near_cut = false;
      for (int32_t id : order) {
        cumulative += probs[id];
        if (std::fabs(cumulative - u) < 1e-6) near_cut = true;
        if (want < 0 && u < cumulative) want = id;
      }
      if (near_cut || want < 0) continue;
      // The sampler draws with a uniform number from the request's generator; here it is given.
      std::vector<float> processed = logits;
      apply_logits_processors(processed, params, prompt, output);
      const int32_t got = sample_token(processed.data(), static_cast<int64_t>(processed.size()),
                                       kernel_sampling_params(params), static_cast<float>(u));
      const int32_t got_ref = sample_token_ref(processed.data(), static_cast<int64_t>(processed.size()),
                                               kernel_sampling_params(params), static_cast<float>(u));
      EXPECT_EQ(got, want) << "u " << u;
      EXPECT_EQ(got_ref, want) << "u " << u;
      ++checked;
    }
    EXPECT_GT(checked, 990);
  }
}

TEST(LogitsProcessors, RepetitionPenaltyCountsEachTokenOnce) {
  // A token in the prompt and three times in the output is divided once, as transformers does.
  std::vector<float> logits = {2.0f, -2.0f, 1.0f};
  RequestSamplingParams p;
  p.repetition_penalty = 2.0f;
  const std::vector<int32_t> prompt = {0, 1}, output = {0, 0, 0};
  apply_logits_processors(logits, p, prompt, output);
  EXPECT_EQ(logits, (std::vector<float>{1.0f, -4.0f, 1.0f}));
}

TEST(LogitsProcessors, IdsWithoutALogitChangeNothing) {
  // A prompt id or bias id beyond the logits (a tokenizer larger than the model's output).
  std::vector<float> logits = {2.0f, -2.0f};
  RequestSamplingParams p;
  p.repetition_penalty = 2.0f;
  p.logit_bias = {{5, 3.0f}, {1, 1.0f}};
  const std::vector<int32_t> prompt = {0, 7};
  apply_logits_processors(logits, p, prompt, {});
  EXPECT_EQ(logits, (std::vector<float>{1.0f, -1.0f}));  // id 1: biased, not in the prompt
}

TEST(LogitsProcessors, FrequencyAndPresenceReadOnlyTheOutput) {
  std::vector<float> logits = {0.0f, 0.0f, 0.0f};
  RequestSamplingParams p;
  p.frequency_penalty = 0.5f;
  p.presence_penalty = 1.0f;
  const std::vector<int32_t> prompt = {2, 2, 2}, output = {0, 1, 1};
  apply_logits_processors(logits, p, prompt, output);
  EXPECT_EQ(logits, (std::vector<float>{-1.5f, -2.0f, 0.0f}));
}

TEST(LogitsProcessors, GreedyRequestsSeeTheBiasAndPenalties) {
  const std::vector<float> logits = {3.0f, 1.0f, 0.0f};
  RequestSamplingParams p;
  p.temperature = 0.0f;
  EXPECT_EQ(sample_request_token(logits.data(), 3, p, 0, {}, {}), 0);
  p.logit_bias = {{2, 5.0f}};
  EXPECT_EQ(sample_request_token(logits.data(), 3, p, 0, {}, {}), 2);
  p.logit_bias.clear();
  p.presence_penalty = 2.5f;
  const std::vector<int32_t> output = {0};
  EXPECT_EQ(sample_request_token(logits.data(), 3, p, 1, {}, output), 1);
  // The caller's logits are left alone (the runners compute raw logprobs from them).
  EXPECT_EQ(logits, (std::vector<float>{3.0f, 1.0f, 0.0f}));
}

TEST(LogitsProcessors, MinPOneKeepsOnlyTheMostLikely) {
  // Ids 1 and 3 tie for the largest logit; 2 is close behind but below min_p = 1 of them.
  const std::vector<float> logits = {1.0f, 4.0f, 3.9f, 4.0f};
  RequestSamplingParams p;
  p.min_p = 1.0f;
  for (float u : {0.0f, 0.3f, 0.49f, 0.51f, 0.99f}) {
    const int32_t token = sample_token(logits.data(), 4, kernel_sampling_params(p), u);
    EXPECT_EQ(token, u < 0.5f ? 1 : 3) << "u " << u;
  }
}

}  // namespace
}  // namespace crosspoint
