// Logprobs against transformers: the CPU engine and runner on tiny random-weight checkpoints
// continue a fixed prompt greedily; token ids, the chosen tokens' logprobs and the top-5 must
// match tests/fixtures/model/logprobs_greedy.json (made by make_logprobs_greedy.py next to it:
// transformers' fp32 logits, log-softmaxed in float64).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "engine/engine.h"
#include "logprobs_collector.h"
#include "model/model.h"
#include "runner/cpu_model_runner.h"

namespace crosspoint {
namespace {

// Both sides compute fp32 logits (max abs difference ~1e-5 on these models, test_model's
// ModelVsTransformers) and log-softmax them in double: a logprob moves by at most twice that.
constexpr double kLogprobTolerance = 1e-4;

nlohmann::json load_fixture() {
  std::ifstream in(std::string(CROSSPOINT_FIXTURES_DIR) + "/model/logprobs_greedy.json");
  EXPECT_TRUE(in.good()) << "missing tests/fixtures/model/logprobs_greedy.json";
  return nlohmann::json::parse(in);
}

TEST(EngineLogprobsPeer, GreedyLogprobsEqualTransformers) {
  const nlohmann::json fixture = load_fixture();
  const int32_t top_n = fixture["top_n"].get<int32_t>();
  ASSERT_FALSE(fixture["sequences"].empty());
  for (const auto& seq : fixture["sequences"]) {
    const std::string name = seq["checkpoint"].get<std::string>();
    SCOPED_TRACE(name);
    auto loaded = Model::load(std::string(CROSSPOINT_FIXTURES_DIR) + "/model/" + name);
    ASSERT_TRUE(loaded.is_ok()) << loaded.status().to_string();
    const std::shared_ptr<Model> model = std::move(loaded).value();
    EngineConfig config;
    config.scheduler.num_blocks = 16;
    config.scheduler.block_size = 4;
    config.scheduler.max_num_seqs = 1;
    config.scheduler.max_num_batched_tokens = 64;
    config.scheduler.max_model_len = 64;
    auto runner = std::make_unique<CpuModelRunner>(
        model->kv_cache_shape(config.scheduler.num_blocks, config.scheduler.block_size), model->vocab_size(),
        [model](const ForwardBatch& batch, CpuKvCache& kv, float* logits) {
          return model->forward(batch, kv, logits);
        });
    Engine engine(config, std::move(runner));
    EngineRequest request;
    request.prompt_token_ids = seq["prompt_ids"].get<std::vector<int32_t>>();
    request.max_tokens = static_cast<int32_t>(seq["steps"].size());
    request.ignore_eos = true;
    request.sampling.temperature = 0.0f;
    request.sampling.num_logprobs = top_n;
    testing::LogprobsCollector collector;
    ASSERT_TRUE(engine.submit(request, collector.sink()).is_ok());
    engine.start();
    ASSERT_TRUE(collector.wait());
    ASSERT_EQ(collector.logprobs().size(), seq["steps"].size());
    double worst = 0.0;  // largest logprob difference, reported in the test's XML output
    for (size_t step = 0; step < seq["steps"].size(); ++step) {
      const auto& want = seq["steps"][step];
      const TokenLogprobs& got = collector.logprobs()[step];
      ASSERT_EQ(collector.tokens()[step], want["token_id"].get<int32_t>()) << "step " << step;
      EXPECT_EQ(got.chosen.token_id, collector.tokens()[step]);
      EXPECT_NEAR(got.chosen.logprob, want["logprob"].get<double>(), kLogprobTolerance) << "step " << step;
      worst = std::max(worst, std::fabs(got.chosen.logprob - want["logprob"].get<double>()));
      ASSERT_EQ(got.top.size(), want["top"].size());
      for (size_t k = 0; k < got.top.size(); ++k) {
        EXPECT_EQ(got.top[k].token_id, want["top"][k][0].get<int32_t>()) << "step " << step << " rank " << k;
        EXPECT_NEAR(got.top[k].logprob, want["top"][k][1].get<double>(), kLogprobTolerance)
            << "step " << step << " rank " << k;
        worst = std::max(worst, std::fabs(got.top[k].logprob - want["top"][k][1].get<double>()));
      }
    }
    RecordProperty("max_logprob_difference_" + name, std::to_string(worst));
  }
}

}  // namespace
}  // namespace crosspoint
