// Sampling on the CUDA runner (kernels/cuda/sampling.h through CudaModelRunner and the real
// engine) on the tiny fp16 checkpoint. What can be checked across runs and precisions:
//   - a fixed seed gives the same tokens twice, with graphs and eagerly alike;
//   - top_k = 1 and a tiny temperature both equal the greedy tokens of the same runner;
//   - greedy requests batched beside sampled ones keep their greedy tokens.
// (Checking each sampled token against the CPU model's top-k would be too strict: fp16 and f32
// logits may order near-equal tokens differently.) Every test skips without a GPU.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <vector>

#include "engine/engine.h"
#include "model/cuda/cuda_model.h"
#include "model/model.h"
#include "model_cuda/tiny_checkpoints.h"
#include "quant/gptq_linear_weight.h"
#include "runner/cuda/cuda_model_runner.h"

namespace crosspoint {
namespace {

using cuda_testing::TinyCheckpoints;
using cuda_testing::TinyPrecision;

#define SKIP_WITHOUT_GPU() \
  if (cuda::cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device"

constexpr int32_t kBlocks = 64;
constexpr int32_t kOutputTokens = 16;

std::unique_ptr<Model> load_fp16_model() {
  auto dir = TinyCheckpoints::get().dir(TinyPrecision::kFp16);
  EXPECT_TRUE(dir.is_ok()) << dir.status().to_string();
  if (!dir.is_ok()) return nullptr;
  ModelLoadOptions options;
  options.linear_formats = quantized_linear_weight_formats();
  auto model = Model::load(*dir, options);
  EXPECT_TRUE(model.is_ok()) << model.status().to_string();
  return model.is_ok() ? std::move(model).value() : nullptr;
}

EngineConfig engine_config() {
  EngineConfig config;
  config.scheduler.max_num_seqs = 4;
  config.scheduler.max_num_batched_tokens = 64;
  config.scheduler.max_model_len = 256;
  config.scheduler.num_blocks = kBlocks;
  config.scheduler.block_size = 16;
  return config;
}

std::unique_ptr<Runner> make_runner(const Model& cpu, bool enforce_eager) {
  const EngineConfig config = engine_config();
  cuda::CudaModelOptions options;
  options.max_num_tokens = config.scheduler.max_num_batched_tokens;
  options.max_num_seqs = config.scheduler.max_num_seqs;
  options.max_model_len = config.scheduler.max_model_len;
  options.num_kv_blocks = kBlocks;
  auto model = cuda::CudaModel::create(cpu, options);
  EXPECT_TRUE(model.is_ok()) << model.status().to_string();
  if (!model.is_ok()) return nullptr;
  cuda::CudaRunnerOptions runner_options;
  runner_options.enforce_eager = enforce_eager;
  runner_options.sample_on_gpu = true;  // these tests are about the GPU sampler
  auto runner = cuda::CudaModelRunner::create(std::move(model).value(), runner_options);
  EXPECT_TRUE(runner.is_ok()) << runner.status().to_string();
  return runner.is_ok() ? std::move(runner).value() : nullptr;
}

// Four concurrent requests of different prompt lengths, `kOutputTokens` tokens each.
std::vector<EngineRequest> requests_with(const std::vector<RequestSamplingParams>& sampling) {
  std::vector<EngineRequest> requests;
  for (size_t i = 0; i < sampling.size(); ++i) {
    EngineRequest r;
    for (size_t t = 0; t < 9 + 23 * i; ++t) r.prompt_token_ids.push_back(static_cast<int32_t>((t * (7 + i) + 11 * i + 3) % 512));
    r.max_tokens = kOutputTokens;
    r.ignore_eos = true;
    r.sampling = sampling[i];
    requests.push_back(std::move(r));
  }
  return requests;
}

RequestSamplingParams sampling(float temperature, int32_t top_k, float top_p, uint64_t seed) {
  RequestSamplingParams p;
  p.temperature = temperature;
  p.top_k = top_k;
  p.top_p = top_p;
  p.seed = seed;
  return p;
}

// Runs the requests through an engine on a fresh runner; each request's tokens.
std::vector<std::vector<int32_t>> run(const Model& cpu, bool enforce_eager, const std::vector<EngineRequest>& requests) {
  std::unique_ptr<Runner> runner = make_runner(cpu, enforce_eager);
  if (runner == nullptr) return {};
  Engine engine(engine_config(), std::move(runner));
  std::mutex mutex;
  std::condition_variable done;
  std::map<int64_t, std::vector<int32_t>> tokens;
  int finished = 0;
  std::vector<int64_t> ids;
  for (const EngineRequest& r : requests) {
    auto id = engine.submit(r, [&](const RequestOutput& out) {
      std::lock_guard<std::mutex> lock(mutex);
      auto& t = tokens[out.request_id];
      t.insert(t.end(), out.new_token_ids.begin(), out.new_token_ids.end());
      if (out.finished) ++finished;
      done.notify_all();
    });
    EXPECT_TRUE(id.is_ok()) << id.status().to_string();
    ids.push_back(id.is_ok() ? *id : -1);
  }
  engine.start();
  {
    std::unique_lock<std::mutex> lock(mutex);
    EXPECT_TRUE(done.wait_for(lock, std::chrono::seconds(120), [&] { return finished >= static_cast<int>(ids.size()); }));
  }
  engine.stop();
  std::vector<std::vector<int32_t>> outputs;
  std::lock_guard<std::mutex> lock(mutex);
  for (int64_t id : ids) outputs.push_back(tokens[id]);
  return outputs;
}

TEST(CudaSamplingTest, AFixedSeedGivesTheSameTokensTwiceWithGraphsAndEagerly) {
  SKIP_WITHOUT_GPU();
  auto cpu = load_fp16_model();
  ASSERT_NE(cpu, nullptr);
  const auto requests = requests_with({sampling(1.0f, 0, 1.0f, 1), sampling(0.8f, 40, 1.0f, 2),
                                       sampling(1.2f, 0, 0.9f, 3), sampling(0.7f, 20, 0.8f, 4)});
  const auto first = run(*cpu, false, requests);
  const auto second = run(*cpu, false, requests);
  const auto eager = run(*cpu, true, requests);
  ASSERT_EQ(first.size(), requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    EXPECT_EQ(first[i].size(), static_cast<size_t>(kOutputTokens)) << "request " << i;
    EXPECT_EQ(first[i], second[i]) << "request " << i << ": same seed, different tokens";
    EXPECT_EQ(first[i], eager[i]) << "request " << i << ": graphs and eager differ";
  }
  // Another seed draws another sequence (16 tokens from a random model: equal only by accident).
  auto reseeded = requests;
  for (auto& r : reseeded) r.sampling.seed += 1000;
  const auto other = run(*cpu, false, reseeded);
  int same = 0;
  for (size_t i = 0; i < requests.size(); ++i) same += other[i] == first[i];
  EXPECT_LT(same, 2) << "changing the seed changed almost nothing";
}

TEST(CudaSamplingTest, TopKOneAndATinyTemperatureEqualGreedy) {
  SKIP_WITHOUT_GPU();
  auto cpu = load_fp16_model();
  ASSERT_NE(cpu, nullptr);
  const RequestSamplingParams greedy = sampling(0.0f, 0, 1.0f, 0);
  const auto greedy_out = run(*cpu, false, requests_with({greedy, greedy, greedy, greedy}));
  const auto top_k_one = run(*cpu, false,
                             requests_with({sampling(1.0f, 1, 1.0f, 5), sampling(1.5f, 1, 0.9f, 6),
                                            sampling(0.3f, 1, 1.0f, 7), sampling(1.0f, 1, 1e-6f, 8)}));
  // 1e-6: a logit 0.01 below the max weighs exp(-1e4) = 0 in the fixed-point rule.
  const auto tiny_t = run(*cpu, false,
                          requests_with({sampling(1e-6f, 0, 1.0f, 9), sampling(1e-6f, 50, 1.0f, 10),
                                         sampling(1e-6f, 0, 0.9f, 11), sampling(1e-6f, 0, 1.0f, 12)}));
  const auto top_p_tiny = run(*cpu, true,
                              requests_with({sampling(1.0f, 0, 1e-6f, 13), sampling(2.0f, 0, 1e-6f, 14),
                                             sampling(0.5f, 7, 1e-6f, 15), sampling(1.0f, 0, 1e-6f, 16)}));
  ASSERT_EQ(greedy_out.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(greedy_out[i].size(), static_cast<size_t>(kOutputTokens));
    EXPECT_EQ(top_k_one[i], greedy_out[i]) << "top_k = 1, request " << i;
    EXPECT_EQ(tiny_t[i], greedy_out[i]) << "temperature 1e-6, request " << i;
    EXPECT_EQ(top_p_tiny[i], greedy_out[i]) << "top_p 1e-6, request " << i;
  }
}

TEST(CudaSamplingTest, GreedyRowsBesideSampledRowsStayGreedy) {
  SKIP_WITHOUT_GPU();
  auto cpu = load_fp16_model();
  ASSERT_NE(cpu, nullptr);
  const RequestSamplingParams greedy = sampling(0.0f, 0, 1.0f, 0);
  const auto all_greedy = run(*cpu, false, requests_with({greedy, greedy, greedy, greedy}));
  const auto mixed = run(*cpu, false,
                         requests_with({greedy, sampling(1.0f, 0, 1.0f, 21), greedy, sampling(0.9f, 30, 0.95f, 22)}));
  ASSERT_EQ(mixed.size(), 4u);
  EXPECT_EQ(mixed[0], all_greedy[0]);
  EXPECT_EQ(mixed[2], all_greedy[2]);
  EXPECT_EQ(mixed[1].size(), static_cast<size_t>(kOutputTokens));
  EXPECT_EQ(mixed[3].size(), static_cast<size_t>(kOutputTokens));
}

}  // namespace
}  // namespace crosspoint
