// Prompt logprobs (vLLM's `prompt_logprobs`, OpenAI `echo` with `logprobs`): the CPU engine on
// tiny random-weight checkpoints gives transformers' logprob, rank and top-5 for every prompt
// position (tests/fixtures/model/prompt_logprobs.json, made by make_prompt_logprobs.py next to
// it), and the same values, bit for bit, whether the prompt runs alone, in chunks, among other
// requests, behind a cached copy of itself, or cut by a per-step limit on prompt logprob rows.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "logprobs_collector.h"
#include "model/model.h"
#include "runner/cpu_model_runner.h"

namespace crosspoint {
namespace {

// As in test_engine_logprobs_peer.cc: fp32 logits within ~1e-5 of transformers', log-softmaxed in
// double on both sides.
constexpr double kLogprobTolerance = 1e-4;

nlohmann::json load_fixture() {
  std::ifstream in(std::string(CROSSPOINT_FIXTURES_DIR) + "/model/prompt_logprobs.json");
  EXPECT_TRUE(in.good()) << "missing tests/fixtures/model/prompt_logprobs.json";
  return nlohmann::json::parse(in);
}

std::shared_ptr<Model> load_model(const std::string& name) {
  auto loaded = Model::load(std::string(CROSSPOINT_FIXTURES_DIR) + "/model/" + name);
  EXPECT_TRUE(loaded.is_ok()) << loaded.status().to_string();
  return loaded.is_ok() ? std::move(loaded).value() : nullptr;
}

EngineConfig small_config() {
  EngineConfig config;
  config.scheduler.num_blocks = 64;
  config.scheduler.block_size = 4;
  config.scheduler.max_num_seqs = 8;
  config.scheduler.max_num_batched_tokens = 64;
  config.scheduler.max_model_len = 64;
  return config;
}

std::unique_ptr<Engine> make_engine(const std::shared_ptr<Model>& model, const EngineConfig& config) {
  auto runner = std::make_unique<CpuModelRunner>(
      model->kv_cache_shape(config.scheduler.num_blocks, config.scheduler.block_size), model->vocab_size(),
      [model](const ForwardBatch& batch, CpuKvCache& kv, float* logits) { return model->forward(batch, kv, logits); });
  return std::make_unique<Engine>(config, std::move(runner));
}

EngineRequest prompt_request(std::vector<int32_t> prompt, int32_t num_prompt_logprobs, int32_t max_tokens = 1) {
  EngineRequest request;
  request.prompt_token_ids = std::move(prompt);
  request.max_tokens = max_tokens;
  request.ignore_eos = true;
  request.sampling.temperature = 0.0f;
  request.sampling.num_prompt_logprobs = num_prompt_logprobs;
  return request;
}

TEST(EnginePromptLogprobs, EqualTransformersAtEveryPromptPosition) {
  const nlohmann::json fixture = load_fixture();
  const int32_t top_n = fixture["top_n"].get<int32_t>();
  ASSERT_FALSE(fixture["sequences"].empty());
  for (const auto& seq : fixture["sequences"]) {
    const std::string name = seq["checkpoint"].get<std::string>();
    SCOPED_TRACE(name);
    const std::shared_ptr<Model> model = load_model(name);
    ASSERT_NE(model, nullptr);
    auto engine = make_engine(model, small_config());
    testing::LogprobsCollector collector;
    ASSERT_TRUE(
        engine->submit(prompt_request(seq["prompt_ids"].get<std::vector<int32_t>>(), top_n), collector.sink()).is_ok());
    engine->start();
    ASSERT_TRUE(collector.wait());
    EXPECT_EQ(collector.num_prompt_logprob_updates(), 1);
    const auto& positions = seq["positions"];
    ASSERT_EQ(collector.prompt_logprobs().size(), positions.size());
    double worst = 0.0;
    for (size_t p = 0; p < positions.size(); ++p) {
      const auto& want = positions[p];
      const TokenLogprobs& got = collector.prompt_logprobs()[p];
      EXPECT_EQ(got.chosen.token_id, want["token_id"].get<int32_t>()) << "position " << p;
      EXPECT_NEAR(got.chosen.logprob, want["logprob"].get<double>(), kLogprobTolerance) << "position " << p;
      EXPECT_EQ(got.chosen_rank, want["rank"].get<int64_t>()) << "position " << p;
      worst = std::max(worst, std::fabs(got.chosen.logprob - want["logprob"].get<double>()));
      ASSERT_EQ(got.top.size(), want["top"].size());
      for (size_t k = 0; k < got.top.size(); ++k) {
        EXPECT_EQ(got.top[k].token_id, want["top"][k][0].get<int32_t>()) << "position " << p << " rank " << k;
        EXPECT_NEAR(got.top[k].logprob, want["top"][k][1].get<double>(), kLogprobTolerance)
            << "position " << p << " rank " << k;
      }
    }
    RecordProperty("max_prompt_logprob_difference_" + name, std::to_string(worst));
  }
}

void expect_identical(const std::vector<TokenLogprobs>& a, const std::vector<TokenLogprobs>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t p = 0; p < a.size(); ++p) {
    EXPECT_EQ(a[p].chosen.token_id, b[p].chosen.token_id) << "position " << p;
    EXPECT_EQ(a[p].chosen.logprob, b[p].chosen.logprob) << "position " << p;  // bit for bit
    EXPECT_EQ(a[p].chosen_rank, b[p].chosen_rank) << "position " << p;
    ASSERT_EQ(a[p].top.size(), b[p].top.size());
    for (size_t k = 0; k < a[p].top.size(); ++k) {
      EXPECT_EQ(a[p].top[k].token_id, b[p].top[k].token_id) << "position " << p;
      EXPECT_EQ(a[p].top[k].logprob, b[p].top[k].logprob) << "position " << p;
    }
  }
}

// The prompt logprobs and tokens of `request` run in an engine with `config`, submitted after
// `before` (run to completion first) and together with `beside`.
struct PromptRun {
  std::vector<TokenLogprobs> prompt_logprobs;
  std::vector<int32_t> tokens;
  int num_prompt_logprob_updates = 0;
};

PromptRun run_prompt(const std::shared_ptr<Model>& model, const EngineConfig& config, const EngineRequest& request,
                     const std::vector<EngineRequest>& before = {}, const std::vector<EngineRequest>& beside = {}) {
  auto engine = make_engine(model, config);
  engine->start();
  for (const EngineRequest& r : before) {
    testing::LogprobsCollector c;
    EXPECT_TRUE(engine->submit(r, c.sink()).is_ok());
    EXPECT_TRUE(c.wait());
  }
  std::vector<std::unique_ptr<testing::LogprobsCollector>> others;
  testing::LogprobsCollector main;
  // The request goes in the middle of the batch.
  for (size_t i = 0; i < beside.size(); ++i) {
    if (i == beside.size() / 2) { EXPECT_TRUE(engine->submit(request, main.sink()).is_ok()); }
    others.push_back(std::make_unique<testing::LogprobsCollector>());
    EXPECT_TRUE(engine->submit(beside[i], others.back()->sink()).is_ok());
  }
  if (beside.empty()) { EXPECT_TRUE(engine->submit(request, main.sink()).is_ok()); }
  EXPECT_TRUE(main.wait());
  for (auto& c : others) EXPECT_TRUE(c->wait());
  return {main.prompt_logprobs(), main.tokens(), main.num_prompt_logprob_updates()};
}

TEST(EnginePromptLogprobs, SameAloneChunkedBatchedCachedAndCut) {
  const std::shared_ptr<Model> model = load_model("llama_untied_f32");
  ASSERT_NE(model, nullptr);
  std::vector<int32_t> prompt;
  for (int i = 0; i < 23; ++i) prompt.push_back((i * 37 + 11) % 200);
  const EngineRequest request = prompt_request(prompt, 4, /*max_tokens=*/5);
  const PromptRun alone = run_prompt(model, small_config(), request);
  ASSERT_EQ(alone.prompt_logprobs.size(), prompt.size() - 1);
  EXPECT_EQ(alone.num_prompt_logprob_updates, 1);
  for (size_t p = 0; p < alone.prompt_logprobs.size(); ++p) {
    EXPECT_EQ(alone.prompt_logprobs[p].chosen.token_id, prompt[p + 1]);
    EXPECT_EQ(alone.prompt_logprobs[p].top.size(), 4u);
  }
  {
    SCOPED_TRACE("chunked prefill: 5 tokens per step");
    EngineConfig config = small_config();
    config.scheduler.max_num_batched_tokens = 5;
    const PromptRun chunked = run_prompt(model, config, request);
    expect_identical(chunked.prompt_logprobs, alone.prompt_logprobs);
    EXPECT_EQ(chunked.tokens, alone.tokens);
  }
  {
    SCOPED_TRACE("batched with other requests, with and without prompt logprobs");
    std::vector<EngineRequest> beside;
    for (int i = 0; i < 4; ++i) {
      std::vector<int32_t> other;
      for (int t = 0; t < 9 + 3 * i; ++t) other.push_back((t * 13 + i * 7 + 1) % 200);
      beside.push_back(prompt_request(other, i % 2 == 0 ? 2 : -1, 6));
    }
    EngineConfig config = small_config();
    config.scheduler.max_num_batched_tokens = 16;
    const PromptRun batched = run_prompt(model, config, request, {}, beside);
    expect_identical(batched.prompt_logprobs, alone.prompt_logprobs);
    EXPECT_EQ(batched.tokens, alone.tokens);
  }
  {
    SCOPED_TRACE("prefix caching with the same prompt already cached");
    EngineConfig config = small_config();
    config.scheduler.enable_prefix_caching = true;
    const PromptRun cached = run_prompt(model, config, request, {prompt_request(prompt, -1, 5)});
    expect_identical(cached.prompt_logprobs, alone.prompt_logprobs);
    EXPECT_EQ(cached.tokens, alone.tokens);
  }
  {
    SCOPED_TRACE("at most 3 prompt logprob rows per step");
    EngineConfig config = small_config();
    config.scheduler.max_prompt_logprob_rows = 3;
    const PromptRun cut = run_prompt(model, config, request, {}, {prompt_request({5, 6, 7, 8, 9, 10, 11}, 1, 4)});
    expect_identical(cut.prompt_logprobs, alone.prompt_logprobs);
    EXPECT_EQ(cut.tokens, alone.tokens);
  }
  {
    SCOPED_TRACE("preempted and recomputed: a KV cache of 9 blocks of 4 tokens");
    EngineConfig config = small_config();
    config.scheduler.num_blocks = 9;
    config.scheduler.max_num_batched_tokens = 8;
    std::vector<EngineRequest> beside;
    for (int i = 0; i < 2; ++i) beside.push_back(prompt_request({1, 2, 3, 4, 5, 6}, -1, 6));
    const PromptRun preempted = run_prompt(model, config, request, {}, beside);
    expect_identical(preempted.prompt_logprobs, alone.prompt_logprobs);
    EXPECT_EQ(preempted.tokens, alone.tokens);
    EXPECT_EQ(preempted.num_prompt_logprob_updates, 1);
  }
}

TEST(EnginePromptLogprobs, NoneUnlessAskedAndAtMost20) {
  const std::shared_ptr<Model> model = load_model("qwen2_tied_f32");
  ASSERT_NE(model, nullptr);
  const PromptRun plain = run_prompt(model, small_config(), prompt_request({3, 4, 5, 6}, -1, 2));
  EXPECT_TRUE(plain.prompt_logprobs.empty());
  EXPECT_EQ(plain.num_prompt_logprob_updates, 0);
  const PromptRun zero = run_prompt(model, small_config(), prompt_request({3, 4, 5, 6}, 0, 2));
  ASSERT_EQ(zero.prompt_logprobs.size(), 3u);
  for (const TokenLogprobs& t : zero.prompt_logprobs) EXPECT_TRUE(t.top.empty());
  // A one-token prompt has no position to report: nothing to send.
  const PromptRun single = run_prompt(model, small_config(), prompt_request({3}, 2, 2));
  EXPECT_TRUE(single.prompt_logprobs.empty());
  auto engine = make_engine(model, small_config());
  testing::LogprobsCollector c;
  auto refused = engine->submit(prompt_request({3, 4}, 21), c.sink());
  ASSERT_FALSE(refused.is_ok());
  EXPECT_NE(refused.status().message().find("prompt logprobs"), std::string::npos) << refused.status().message();
}

}  // namespace
}  // namespace crosspoint
