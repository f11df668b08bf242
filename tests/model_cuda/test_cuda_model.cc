// The CUDA model against the CPU model on tiny random Qwen2 checkpoints in every precision,
// and the CUDA runner through the real engine (greedy tokens equal to the CPU runner's;
// CUDA graphs equal to eager). Every test here skips when no GPU is present.
//
// Tolerance: each logits row may differ from the CPU's f32 logits by at most
// kLogitTolerance[precision] x max|CPU logit| of that row. The GPU keeps activations in fp16
// (the CPU in f32), so fp16 rounding of each layer's input (rel. 2^-11) accumulates over
// 2 layers and the head: 2e-2 for fp16 and W4A16 (identical weights on both sides); W8A8
// re-quantises fp16 rather than f32 activations, so an element may round to a neighbouring
// e4m3 value (one e4m3 step is rel. 2^-3, so a flipped rounding moves that product by up to
// 2^-4): 8e-2. (The first H200 run measured up to 5.0 % of the logit scale for W8A8, over a
// first guess of 4e-2; fp16 and W4A16 stayed inside 2e-2.) Greedy tokens must match unless
// the CPU's top two logits are closer than that tolerance (a tie at fp16 precision).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>
#include <condition_variable>
#include <map>
#include <mutex>

#include "engine/engine.h"
#include "model/cuda/cuda_model.h"
#include "model/model.h"
#include "model/model_test_util.h"
#include "model_cuda/tiny_checkpoints.h"
#include "quant/gptq_linear_weight.h"
#include "runner/cpu_model_runner.h"
#include "runner/cuda/cuda_model_runner.h"
#include "kernels/cuda/programmatic_launch.cuh"

namespace crosspoint {
namespace {

using cuda_testing::TinyCheckpoints;
using cuda_testing::TinyPrecision;

#define SKIP_WITHOUT_GPU() \
  if (cuda::cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device"

float tolerance_for(TinyPrecision p) { return p == TinyPrecision::kFp8 ? 8e-2f : 2e-2f; }

std::unique_ptr<Model> load_cpu_model(TinyPrecision precision) {
  auto dir = TinyCheckpoints::get().dir(precision);
  EXPECT_TRUE(dir.is_ok()) << dir.status().to_string();
  if (!dir.is_ok()) return nullptr;
  ModelLoadOptions options;
  options.linear_formats = quantized_linear_weight_formats();
  auto model = Model::load(*dir, options);
  EXPECT_TRUE(model.is_ok()) << model.status().to_string();
  return model.is_ok() ? std::move(model).value() : nullptr;
}

int32_t argmax_of(const float* row, int32_t n) { return static_cast<int32_t>(std::max_element(row, row + n) - row); }

// Compares one step's logits rows; returns the CPU greedy tokens (fed to the next step).
std::vector<int32_t> compare_rows(const std::vector<float>& cpu, const std::vector<float>& gpu, int32_t vocab,
                                  float tolerance, const std::string& what) {
  std::vector<int32_t> next;
  const size_t rows = cpu.size() / vocab;
  for (size_t r = 0; r < rows; ++r) {
    const float* c = cpu.data() + r * vocab;
    const float* g = gpu.data() + r * vocab;
    float scale = 0.0f, worst = 0.0f;
    for (int32_t v = 0; v < vocab; ++v) {
      scale = std::max(scale, std::fabs(c[v]));
      worst = std::max(worst, std::fabs(c[v] - g[v]));
    }
    EXPECT_TRUE(std::all_of(g, g + vocab, [](float x) { return std::isfinite(x); })) << what << " row " << r;
    EXPECT_LE(worst, tolerance * scale) << what << " row " << r << ": max |gpu - cpu| " << worst << ", logit scale "
                                        << scale;
    const int32_t cpu_token = argmax_of(c, vocab), gpu_token = argmax_of(g, vocab);
    if (gpu_token != cpu_token) {
      EXPECT_LE(c[cpu_token] - c[gpu_token], tolerance * scale)
          << what << " row " << r << ": greedy token " << gpu_token << " on the GPU, " << cpu_token << " on the CPU";
    }
    next.push_back(cpu_token);
  }
  return next;
}

class CudaModelVsCpuTest : public ::testing::TestWithParam<TinyPrecision> {};

// Prefill of two sequences, decodes, then a third sequence prefilled in two chunks (the
// second continuing the cached prefix) beside decodes, with logits for every token of the
// chunk: the same ForwardBatch sequence through both models and their own caches.
TEST_P(CudaModelVsCpuTest, LogitsMatchTheCpuModel) {
  SKIP_WITHOUT_GPU();
  const TinyPrecision precision = GetParam();
  auto cpu = load_cpu_model(precision);
  ASSERT_NE(cpu, nullptr);
  constexpr int32_t kBlocks = 48, kMaxBlocksPerSeq = 8, kBlockSize = 16;
  cuda::CudaModelOptions options;
  options.max_num_tokens = 96;
  options.max_num_seqs = 4;
  options.max_num_logits = 64;
  options.max_model_len = kMaxBlocksPerSeq * kBlockSize;
  options.num_kv_blocks = kBlocks;
  auto gpu = cuda::CudaModel::create(*cpu, options);
  ASSERT_TRUE(gpu.is_ok()) << gpu.status().to_string();
  EXPECT_EQ((*gpu)->num_kv_blocks(), kBlocks);
  CpuKvCache cpu_cache(cpu->kv_cache_shape(kBlocks, kBlockSize));
  testing::BatchBuilder builder(3, kMaxBlocksPerSeq, kBlockSize);
  const int32_t V = cpu->vocab_size();
  const float tol = tolerance_for(precision);

  auto step = [&](const std::vector<testing::SeqChunk>& chunks, bool all_logits, const std::string& what) {
    const ForwardBatch batch = builder.build(chunks, all_logits);
    std::vector<float> cpu_logits(batch.logits_token_idx.size() * V), gpu_logits(cpu_logits.size(), NAN);
    EXPECT_TRUE(cpu->forward(batch, cpu_cache, cpu_logits.data()).is_ok());
    const Status s = (*gpu)->forward_host(batch, gpu_logits.data());
    EXPECT_TRUE(s.is_ok()) << what << ": " << s.to_string();
    return compare_rows(cpu_logits, gpu_logits, V, tol, what);
  };
  std::vector<int32_t> prompt0, prompt1, prompt2;
  for (int32_t i = 0; i < 37; ++i) prompt0.push_back((i * 31 + 5) % V);
  for (int32_t i = 0; i < 20; ++i) prompt1.push_back((i * 17 + 9) % V);
  for (int32_t i = 0; i < 41; ++i) prompt2.push_back((i * 13 + 3) % V);

  std::vector<int32_t> next = step({{0, prompt0}, {1, prompt1}}, false, "prefill");
  for (int d = 0; d < 3 && !::testing::Test::HasFatalFailure(); ++d)
    next = step({{0, {next[0]}}, {1, {next[1]}}}, false, "decode " + std::to_string(d));
  const std::vector<int32_t> chunk_a(prompt2.begin(), prompt2.begin() + 24), chunk_b(prompt2.begin() + 24, prompt2.end());
  // Rows: seq 2's chunk end (not sampled by an engine), seq 0.
  const std::vector<int32_t> first = step({{2, chunk_a}, {0, {next[0]}}}, false, "chunk 1 + decode");
  // Rows: seq 1, then every token of seq 2's second chunk.
  const std::vector<int32_t> second = step({{1, {next[1]}}, {2, chunk_b}}, true, "chunk 2 (all logits) + decode");
  ASSERT_EQ(second.size(), 1 + chunk_b.size());
  step({{0, {first[1]}}, {1, {second[0]}}, {2, {second.back()}}}, false, "three decodes");
}

INSTANTIATE_TEST_SUITE_P(Precisions, CudaModelVsCpuTest,
                         ::testing::Values(TinyPrecision::kFp16, TinyPrecision::kFp8, TinyPrecision::kW4A16Rtn,
                                           TinyPrecision::kW4A16GptqActOrder),
                         [](const ::testing::TestParamInfo<TinyPrecision>& info) {
                           return std::string(cuda_testing::precision_name(info.param));
                         });

TEST(CudaModelTest, ReportsMemoryAndRefusesATooSmallFraction) {
  SKIP_WITHOUT_GPU();
  auto cpu = load_cpu_model(TinyPrecision::kFp16);
  ASSERT_NE(cpu, nullptr);
  cuda::CudaModelOptions options;
  options.max_num_tokens = 64;
  options.max_num_seqs = 8;
  options.max_model_len = 256;
  options.gpu_memory_utilization = 0.5;
  auto gpu = cuda::CudaModel::create(*cpu, options);
  ASSERT_TRUE(gpu.is_ok()) << gpu.status().to_string();
  const cuda::CudaMemoryReport& mem = (*gpu)->memory();
  EXPECT_FALSE(mem.gpu_name.empty());
  EXPECT_GT(mem.weight_bytes, 2u * 512 * 256 * 2);  // at least embedding + lm_head in fp16
  EXPECT_EQ(mem.kv_bytes_per_token, 2u * 2 * 2 * 64 * 2);
  EXPECT_GT(mem.num_kv_blocks, 0);
  EXPECT_EQ(mem.kv_tokens, mem.num_kv_blocks * 16);
  EXPECT_LE(mem.used_before_kv_bytes + mem.kv_bytes, mem.total_bytes / 2 + (1u << 20));
  options.gpu_memory_utilization = 0.0001;
  auto refused = cuda::CudaModel::create(*cpu, options);
  ASSERT_FALSE(refused.is_ok());
  EXPECT_NE(refused.status().message().find("--gpu-memory-utilization"), std::string::npos)
      << refused.status().to_string();
}

// Collects each request's tokens; wait() blocks until all have finished.
class Collector {
 public:
  OutputSink sink() {
    return [this](const RequestOutput& out) {
      std::lock_guard<std::mutex> lock(mutex_);
      auto& tokens = tokens_[out.request_id];
      tokens.insert(tokens.end(), out.new_token_ids.begin(), out.new_token_ids.end());
      if (out.finished) ++num_finished_;
      done_.notify_all();
    };
  }
  bool wait(int n) {
    std::unique_lock<std::mutex> lock(mutex_);
    return done_.wait_for(lock, std::chrono::seconds(120), [&] { return num_finished_ >= n; });
  }
  std::vector<int32_t> tokens(int64_t id) {
    std::lock_guard<std::mutex> lock(mutex_);
    return tokens_[id];
  }

 private:
  std::mutex mutex_;
  std::condition_variable done_;
  std::map<int64_t, std::vector<int32_t>> tokens_;
  int num_finished_ = 0;
};

constexpr int32_t kEngineBlocks = 64;

EngineConfig engine_config() {
  EngineConfig config;
  config.scheduler.max_num_seqs = 4;
  config.scheduler.max_num_batched_tokens = 64;  // the prompts below need chunked prefill
  config.scheduler.max_model_len = 256;
  config.scheduler.num_blocks = kEngineBlocks;
  config.scheduler.block_size = 16;
  return config;
}

// Four concurrent greedy requests of different prompt lengths (16 tokens each, ignore_eos).
std::vector<EngineRequest> greedy_requests() {
  std::vector<EngineRequest> requests;
  for (int i = 0; i < 4; ++i) {
    EngineRequest r;
    for (int t = 0; t < 9 + 23 * i; ++t) r.prompt_token_ids.push_back((t * (7 + i) + 11 * i + 3) % 512);
    r.max_tokens = 16;
    r.ignore_eos = true;
    requests.push_back(std::move(r));
  }
  return requests;
}

std::vector<std::vector<int32_t>> run_engine(std::unique_ptr<Runner> runner, const std::vector<EngineRequest>& requests) {
  Engine engine(engine_config(), std::move(runner));
  Collector collector;
  std::vector<int64_t> ids;
  for (const auto& r : requests) {
    auto id = engine.submit(r, collector.sink());
    EXPECT_TRUE(id.is_ok()) << id.status().to_string();
    ids.push_back(id.is_ok() ? *id : -1);
  }
  engine.start();
  EXPECT_TRUE(collector.wait(static_cast<int>(requests.size())));
  std::vector<std::vector<int32_t>> outputs;
  for (int64_t id : ids) outputs.push_back(collector.tokens(id));
  engine.stop();
  return outputs;
}

std::unique_ptr<cuda::CudaModelRunner> make_cuda_runner(const Model& cpu, bool enforce_eager) {
  const EngineConfig config = engine_config();
  cuda::CudaModelOptions options;
  options.max_num_tokens = config.scheduler.max_num_batched_tokens;
  options.max_num_seqs = config.scheduler.max_num_seqs;
  options.max_model_len = config.scheduler.max_model_len;
  options.num_kv_blocks = kEngineBlocks;
  auto model = cuda::CudaModel::create(cpu, options);
  EXPECT_TRUE(model.is_ok()) << model.status().to_string();
  if (!model.is_ok()) return nullptr;
  cuda::CudaRunnerOptions runner_options;
  runner_options.enforce_eager = enforce_eager;
  auto runner = cuda::CudaModelRunner::create(std::move(model).value(), runner_options);
  EXPECT_TRUE(runner.is_ok()) << runner.status().to_string();
  return runner.is_ok() ? std::move(runner).value() : nullptr;
}

// Logits of the token after `tokens` on the CPU (one sequence, no cache reuse).
std::vector<float> cpu_next_logits(const Model& model, const std::vector<int32_t>& tokens) {
  testing::BatchBuilder builder(1, 32, 16);
  const ForwardBatch batch = builder.build({{0, tokens}}, false);
  CpuKvCache cache(model.kv_cache_shape(32, 16));
  std::vector<float> logits(model.vocab_size());
  EXPECT_TRUE(model.forward(batch, cache, logits.data()).is_ok());
  return logits;
}

TEST(CudaModelRunnerTest, EngineGreedyOutputsMatchTheCpuRunner) {
  SKIP_WITHOUT_GPU();
  auto cpu = load_cpu_model(TinyPrecision::kFp16);
  ASSERT_NE(cpu, nullptr);
  const auto requests = greedy_requests();
  const Model* model_ptr = cpu.get();
  auto cpu_outputs = run_engine(std::make_unique<CpuModelRunner>(
                                    cpu->kv_cache_shape(kEngineBlocks, 16), cpu->vocab_size(),
                                    [model_ptr](const ForwardBatch& b, CpuKvCache& kv, float* logits) {
                                      return model_ptr->forward(b, kv, logits);
                                    }),
                                requests);
  auto runner = make_cuda_runner(*cpu, /*enforce_eager=*/false);
  ASSERT_NE(runner, nullptr);
  cuda::CudaModelRunner* cuda_runner = runner.get();
  auto gpu_outputs = run_engine(std::move(runner), requests);
  (void)cuda_runner;
  for (size_t i = 0; i < requests.size(); ++i) {
    ASSERT_EQ(cpu_outputs[i].size(), 16u);
    ASSERT_EQ(gpu_outputs[i].size(), 16u);
    // Identical, or the first difference is a near-tie of the CPU's own logits.
    const auto mismatch = std::mismatch(cpu_outputs[i].begin(), cpu_outputs[i].end(), gpu_outputs[i].begin());
    if (mismatch.first == cpu_outputs[i].end()) continue;
    const size_t at = mismatch.first - cpu_outputs[i].begin();
    std::vector<int32_t> prefix = requests[i].prompt_token_ids;
    prefix.insert(prefix.end(), cpu_outputs[i].begin(), cpu_outputs[i].begin() + at);
    const std::vector<float> logits = cpu_next_logits(*cpu, prefix);
    float scale = 0.0f;
    for (float v : logits) scale = std::max(scale, std::fabs(v));
    EXPECT_LE(logits[*mismatch.first] - logits[*mismatch.second], tolerance_for(TinyPrecision::kFp16) * scale)
        << "request " << i << " differs at output token " << at << " without a near-tie";
  }
}

TEST(CudaModelRunnerTest, GraphsGiveTheSameTokensAsEager) {
  SKIP_WITHOUT_GPU();
  auto cpu = load_cpu_model(TinyPrecision::kFp16);
  ASSERT_NE(cpu, nullptr);
  auto requests = greedy_requests();
  // One sampled request too: the host sampler sees the same f32 rows either way.
  requests[3].sampling.temperature = 0.8f;
  requests[3].sampling.top_p = 0.9f;
  requests[3].sampling.seed = 1234;
  auto graph_runner = make_cuda_runner(*cpu, false);
  auto eager_runner = make_cuda_runner(*cpu, true);
  ASSERT_NE(graph_runner, nullptr);
  ASSERT_NE(eager_runner, nullptr);
  // The report is compared as text: a mismatch then prints both sides plainly.
  const auto joined = [](const std::vector<int32_t>& v) {
    std::string text;
    for (int32_t x : v) text += std::to_string(x) + " ";
    return text;
  };
  const cuda::CudaGraphReport& report = graph_runner->graph_report();
  ASSERT_TRUE(report.fallback_reason.empty()) << report.fallback_reason;
  EXPECT_EQ(joined(report.captured_buckets), "1 2 4 ");
  EXPECT_EQ(joined(report.context_bounds), "256 ");
  EXPECT_TRUE(eager_runner->graph_report().captured_buckets.empty());
  cuda::CudaModelRunner* graph_ptr = graph_runner.get();
  cuda::CudaModelRunner* eager_ptr = eager_runner.get();
  Engine graph_engine(engine_config(), std::move(graph_runner));
  Engine eager_engine(engine_config(), std::move(eager_runner));
  auto run = [&](Engine& engine) {
    Collector collector;
    std::vector<int64_t> ids;
    for (const auto& r : requests) ids.push_back(engine.submit(r, collector.sink()).value());
    engine.start();
    EXPECT_TRUE(collector.wait(static_cast<int>(requests.size())));
    std::vector<std::vector<int32_t>> out;
    for (int64_t id : ids) out.push_back(collector.tokens(id));
    engine.stop();
    return out;
  };
  const auto graph_outputs = run(graph_engine);
  const auto eager_outputs = run(eager_engine);
  EXPECT_EQ(graph_outputs, eager_outputs);
  EXPECT_GT(graph_ptr->num_graph_steps(), 0);
  EXPECT_EQ(eager_ptr->num_graph_steps(), 0);
  for (const auto& tokens : graph_outputs)
    for (int32_t t : tokens) EXPECT_TRUE(t >= 0 && t < 512);
}

// Programmatic dependent launch lets each kernel start before the previous one ends; every
// kernel must still read its inputs only after they are complete. A kernel that reads too
// early gives different tokens than the same graphs captured without it. (fp16 and W8A8 run
// deterministic kernels; W4A16 prefill sums split-K partials in any order, so its tokens may
// legitimately differ at a near-tie and it is covered by the CPU comparisons instead, which
// run with programmatic launch on as every GPU run does.)
TEST(CudaModelRunnerTest, ProgrammaticLaunchGivesTheSameTokensAsPlainLaunches) {
  SKIP_WITHOUT_GPU();
  const bool was_enabled = cuda::programmatic_launch_enabled();
  for (TinyPrecision precision : {TinyPrecision::kFp16, TinyPrecision::kFp8}) {
    SCOPED_TRACE(static_cast<int>(precision));
    auto cpu = load_cpu_model(precision);
    ASSERT_NE(cpu, nullptr);
    const auto requests = greedy_requests();
    auto run = [&](bool programmatic) {
      cuda::set_programmatic_launch_enabled(programmatic);  // graphs keep what was in force at capture
      auto runner = make_cuda_runner(*cpu, false);
      EXPECT_NE(runner, nullptr);
      std::vector<std::vector<int32_t>> out;
      if (!runner) return out;
      Engine engine(engine_config(), std::move(runner));
      Collector collector;
      std::vector<int64_t> ids;
      for (const auto& r : requests) ids.push_back(engine.submit(r, collector.sink()).value());
      engine.start();
      EXPECT_TRUE(collector.wait(static_cast<int>(requests.size())));
      for (int64_t id : ids) out.push_back(collector.tokens(id));
      engine.stop();
      return out;
    };
    const auto plain = run(false);
    const auto programmatic = run(true);
    EXPECT_EQ(plain, programmatic);
  }
  cuda::set_programmatic_launch_enabled(was_enabled);
}

}  // namespace
}  // namespace crosspoint
