// Reproducibility on every device (docs/serving.md, "Determinism"):
//   - run to run: the same batches give bit-identical logits and the same tokens;
//   - batch invariance (serve --deterministic on the GPU; always so on the CPU): a sequence's
//     logits and tokens do not depend on the other rows of its batch, on its position there, on
//     how its prompt was chunked, or on preemption and recompute.
// Tiny random checkpoints in every precision, whose near-ties expose any difference in the
// order of a reduction. The CUDA cases skip on a machine without a GPU; the cpu_split cases run
// the CPU model split over two tensor-parallel ranks (threads summing with an all-reduce).
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "model/model.h"
#include "model/tensor_parallel_model.h"
#include "model/model_test_util.h"
#include "model_cuda/tiny_checkpoints.h"
#include "quant/gptq_linear_weight.h"
#include "runner/cpu_model_runner.h"
#ifdef CROSSPOINT_HAVE_CUDA
#include "model/cuda/cuda_model.h"
#include "runner/cuda/cuda_model_runner.h"
#endif

namespace crosspoint {
namespace {

using cuda_testing::TinyCheckpoints;
using cuda_testing::TinyPrecision;

enum class Device { kCpu, kCpuSplit, kCuda };
constexpr int32_t kSplitRanks = 2;

struct Case {
  Device device;
  TinyPrecision precision;
};

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  const Device d = info.param.device;
  return std::string(d == Device::kCpu        ? "cpu_"
                     : d == Device::kCpuSplit ? "cpu_split_"
                                              : "cuda_") +
         cuda_testing::precision_name(info.param.precision);
}

bool gpu_visible() {
#ifdef CROSSPOINT_HAVE_CUDA
  return cuda::cuda_device_count() > 0;
#else
  return false;
#endif
}

#define SKIP_IF_DEVICE_MISSING(device) \
  if ((device) == Device::kCuda && !gpu_visible()) GTEST_SKIP() << "no CUDA device"

// The tiny checkpoint of `precision` as a CPU model (the GPU model is built from it).
std::unique_ptr<Model> load_model(TinyPrecision precision) {
  auto dir = TinyCheckpoints::get().dir(precision);
  EXPECT_TRUE(dir.is_ok()) << dir.status().to_string();
  if (!dir.is_ok()) return nullptr;
  ModelLoadOptions options;
  options.linear_formats = quantized_linear_weight_formats();
  auto model = Model::load(*dir, options);
  EXPECT_TRUE(model.is_ok()) << model.status().to_string();
  return model.is_ok() ? std::move(model).value() : nullptr;
}

constexpr int32_t kBlockSize = 16, kMaxBlocksPerSeq = 8, kNumBlocks = 48;

// One model with its own KV cache on one device: ForwardBatch in, logits rows out.
class StepModel {
 public:
  virtual ~StepModel() = default;
  virtual Status forward(const ForwardBatch& batch, float* logits) = 0;
};

class CpuStepModel : public StepModel {
 public:
  explicit CpuStepModel(const Model& model) : model_(model), cache_(model.kv_cache_shape(kNumBlocks, kBlockSize)) {}
  Status forward(const ForwardBatch& batch, float* logits) override { return model_.forward(batch, cache_, logits); }

 private:
  const Model& model_;
  CpuKvCache cache_;
};

class SplitStepModel : public StepModel {
 public:
  static std::unique_ptr<SplitStepModel> create(const Model& model) {
    auto split = TensorParallelModel::create(model, kSplitRanks);
    EXPECT_TRUE(split.is_ok()) << split.status().to_string();
    if (!split.is_ok()) return nullptr;
    return std::unique_ptr<SplitStepModel>(new SplitStepModel(std::move(split).value()));
  }
  Status forward(const ForwardBatch& batch, float* logits) override { return split_->forward(batch, cache_, logits); }

 private:
  explicit SplitStepModel(std::unique_ptr<TensorParallelModel> split)
      : split_(std::move(split)), cache_(split_->kv_cache_shape(kNumBlocks, kBlockSize, DType::kF32)) {}
  std::unique_ptr<TensorParallelModel> split_;
  CpuKvCache cache_;
};

#ifdef CROSSPOINT_HAVE_CUDA
class CudaStepModel : public StepModel {
 public:
  // nullptr after a failed expectation.
  static std::unique_ptr<CudaStepModel> create(const Model& model, const cuda::CudaModelOptions& options) {
    auto gpu = cuda::CudaModel::create(model, options);
    EXPECT_TRUE(gpu.is_ok()) << gpu.status().to_string();
    if (!gpu.is_ok()) return nullptr;
    std::unique_ptr<CudaStepModel> m(new CudaStepModel());
    m->model_ = std::move(gpu).value();
    auto kv = m->model_->make_kv_cache(kNumBlocks);
    auto inputs = m->model_->make_step_inputs();
    EXPECT_TRUE(kv.is_ok() && inputs.is_ok());
    if (!kv.is_ok() || !inputs.is_ok()) return nullptr;
    m->kv_ = std::move(kv).value();
    m->inputs_ = std::move(inputs).value();
    return m;
  }
  Status forward(const ForwardBatch& batch, float* logits) override {
    return model_->forward_host(batch, kv_, inputs_, logits);
  }

 private:
  CudaStepModel() = default;
  std::unique_ptr<cuda::CudaModel> model_;
  cuda::CudaKvCache kv_;
  cuda::StepInputStaging inputs_;
};
#endif

std::unique_ptr<StepModel> make_step_model(Device device, const Model& model, bool batch_invariant) {
  if (device == Device::kCpu) return std::make_unique<CpuStepModel>(model);
  if (device == Device::kCpuSplit) return SplitStepModel::create(model);
#ifdef CROSSPOINT_HAVE_CUDA
  cuda::CudaModelOptions options;
  options.max_num_tokens = 96;
  options.max_num_seqs = 4;
  options.max_num_logits = 64;
  options.max_model_len = kMaxBlocksPerSeq * kBlockSize;
  options.batch_invariant = batch_invariant;
  return CudaStepModel::create(model, options);
#endif
  return nullptr;
}

std::vector<int32_t> tokens(int32_t n, int32_t mul, int32_t add, int32_t vocab) {
  std::vector<int32_t> out;
  for (int32_t i = 0; i < n; ++i) out.push_back((i * mul + add) % vocab);
  return out;
}

// The logits rows a step asked for, as raw floats.
std::vector<float> run_step(StepModel& model, testing::BatchBuilder& builder,
                            const std::vector<testing::SeqChunk>& chunks, int32_t vocab) {
  const ForwardBatch batch = builder.build(chunks, false);
  std::vector<float> logits(batch.logits_token_idx.size() * vocab, NAN);
  const Status s = model.forward(batch, logits.data());
  EXPECT_TRUE(s.is_ok()) << s.to_string();
  return logits;
}

std::vector<float> row(const std::vector<float>& logits, size_t r, int32_t vocab) {
  return std::vector<float>(logits.begin() + static_cast<int64_t>(r) * vocab,
                            logits.begin() + static_cast<int64_t>(r + 1) * vocab);
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

int count_different(const std::vector<float>& a, const std::vector<float>& b) {
  int n = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) n += std::memcmp(&a[i], &b[i], sizeof(float)) != 0;
  return n;
}

// The target sequence (prompt of 37 tokens, then three teacher-forced decodes) run alone: its
// logits after the prompt and after each decode.
std::vector<std::vector<float>> target_alone(StepModel& model, int32_t vocab) {
  testing::BatchBuilder builder(1, kMaxBlocksPerSeq, kBlockSize);
  const std::vector<int32_t> prompt = tokens(37, 31, 5, vocab);
  std::vector<std::vector<float>> out;
  out.push_back(run_step(model, builder, {{0, prompt}}, vocab));
  for (int32_t t : {11, 200, 77}) out.push_back(run_step(model, builder, {{0, {t}}}, vocab));
  return out;
}

// The same target as sequence 1 of three: its prompt in two chunks of 24 and 13 beside other
// sequences' prefills and decodes, then its decodes at positions 1, 0 and 2 of three-row steps.
// Every step's logits (all rows), and which row is the target's.
struct BatchedRun {
  std::vector<std::vector<float>> step_logits;
  std::vector<size_t> target_row;  // per compared step
  std::vector<size_t> compared_step;
};
BatchedRun target_in_batches(StepModel& model, int32_t vocab) {
  testing::BatchBuilder builder(3, kMaxBlocksPerSeq, kBlockSize);
  const std::vector<int32_t> prompt = tokens(37, 31, 5, vocab);
  const std::vector<int32_t> chunk_a(prompt.begin(), prompt.begin() + 24), chunk_b(prompt.begin() + 24, prompt.end());
  BatchedRun run;
  auto step = [&](const std::vector<testing::SeqChunk>& chunks, int target_row) {
    run.step_logits.push_back(run_step(model, builder, chunks, vocab));
    if (target_row >= 0) {
      run.compared_step.push_back(run.step_logits.size() - 1);
      run.target_row.push_back(static_cast<size_t>(target_row));
    }
  };
  step({{0, tokens(20, 17, 9, vocab)}, {1, chunk_a}}, -1);
  step({{2, tokens(11, 13, 3, vocab)}, {1, chunk_b}, {0, {5}}}, 1);
  step({{0, {6}}, {1, {11}}, {2, {7}}}, 1);
  step({{1, {200}}, {2, {8}}, {0, {9}}}, 0);
  step({{2, {10}}, {0, {12}}, {1, {77}}}, 2);
  return run;
}

class Determinism : public ::testing::TestWithParam<Case> {};

// Run to run, default mode: the same sequence of mixed batches on fresh models gives the same
// bits in every logits row, five times over.
TEST_P(Determinism, SameBatchesGiveTheSameBitsRunToRun) {
  SKIP_IF_DEVICE_MISSING(GetParam().device);
  auto model = load_model(GetParam().precision);
  ASSERT_NE(model, nullptr);
  const int32_t V = model->vocab_size();
  std::vector<std::vector<float>> first;
  for (int run = 0; run < 5; ++run) {
    auto step_model = make_step_model(GetParam().device, *model, /*batch_invariant=*/false);
    ASSERT_NE(step_model, nullptr);
    const BatchedRun r = target_in_batches(*step_model, V);
    if (run == 0) {
      first = r.step_logits;
      continue;
    }
    ASSERT_EQ(r.step_logits.size(), first.size());
    for (size_t s = 0; s < first.size(); ++s) {
      EXPECT_TRUE(same_bits(r.step_logits[s], first[s]))
          << "run " << run << " step " << s << ": " << count_different(r.step_logits[s], first[s])
          << " logits differ from run 0";
    }
  }
}

// Batch invariance: the target's logits alone equal, bit for bit, its logits in mixed batches
// (prefill chunked differently, at different row positions, beside prefills and decodes).
TEST_P(Determinism, ASequencesLogitsDoNotDependOnItsBatch) {
  SKIP_IF_DEVICE_MISSING(GetParam().device);
  auto model = load_model(GetParam().precision);
  ASSERT_NE(model, nullptr);
  const int32_t V = model->vocab_size();
  auto alone_model = make_step_model(GetParam().device, *model, /*batch_invariant=*/true);
  auto batched_model = make_step_model(GetParam().device, *model, /*batch_invariant=*/true);
  ASSERT_NE(alone_model, nullptr);
  ASSERT_NE(batched_model, nullptr);
  const std::vector<std::vector<float>> alone = target_alone(*alone_model, V);
  const BatchedRun batched = target_in_batches(*batched_model, V);
  ASSERT_EQ(batched.compared_step.size(), alone.size());
  for (size_t i = 0; i < alone.size(); ++i) {
    const std::vector<float> in_batch = row(batched.step_logits[batched.compared_step[i]], batched.target_row[i], V);
    EXPECT_TRUE(same_bits(in_batch, alone[i]))
        << (i == 0 ? "after the prompt" : "after decode " + std::to_string(i)) << ": "
        << count_different(in_batch, alone[i]) << " of the target's logits differ from its run alone";
  }
}

// ---- Through the engine: greedy and seeded sampling, alone, amid a batch, under preemption.

std::unique_ptr<Runner> make_runner(Device device, const Model& model, int32_t num_blocks, const EngineConfig& config) {
  if (device == Device::kCpu) {
    const Model* m = &model;
    return std::make_unique<CpuModelRunner>(
        model.kv_cache_shape(num_blocks, config.scheduler.block_size), model.vocab_size(),
        [m](const ForwardBatch& batch, CpuKvCache& kv, float* logits) { return m->forward(batch, kv, logits); });
  }
  if (device == Device::kCpuSplit) {
    auto made = TensorParallelModel::create(model, kSplitRanks);
    EXPECT_TRUE(made.is_ok()) << made.status().to_string();
    if (!made.is_ok()) return nullptr;
    std::shared_ptr<const TensorParallelModel> split = std::move(made).value();
    return std::make_unique<CpuModelRunner>(split->kv_cache_shape(num_blocks, config.scheduler.block_size, DType::kF32),
                                            model.vocab_size(),
                                            [split](const ForwardBatch& batch, CpuKvCache& kv, float* logits) {
                                              return split->forward(batch, kv, logits);
                                            });
  }
#ifdef CROSSPOINT_HAVE_CUDA
  cuda::CudaModelOptions options;
  options.max_num_tokens = config.scheduler.max_num_batched_tokens;
  options.max_num_seqs = config.scheduler.max_num_seqs;
  options.max_model_len = config.scheduler.max_model_len;
  options.batch_invariant = true;
  auto gpu = cuda::CudaModel::create(model, options);
  EXPECT_TRUE(gpu.is_ok()) << gpu.status().to_string();
  if (!gpu.is_ok()) return nullptr;
  cuda::CudaRunnerOptions runner_options;
  runner_options.sample_on_gpu = true;  // as serve runs it; graphs on
  runner_options.num_kv_blocks = num_blocks;
  auto runner = cuda::CudaModelRunner::create(std::move(gpu).value(), runner_options);
  EXPECT_TRUE(runner.is_ok()) << runner.status().to_string();
  if (runner.is_ok()) return std::move(runner).value();
#endif
  return nullptr;
}

EngineConfig engine_config(int32_t num_blocks, int32_t max_num_batched_tokens) {
  EngineConfig config;
  config.scheduler.max_num_seqs = 4;
  config.scheduler.max_num_batched_tokens = max_num_batched_tokens;
  config.scheduler.max_model_len = kMaxBlocksPerSeq * kBlockSize;
  config.scheduler.num_blocks = num_blocks;
  config.scheduler.block_size = kBlockSize;
  return config;
}

EngineRequest request(int32_t prompt_len, int32_t salt, float temperature, uint64_t seed) {
  EngineRequest r;
  r.prompt_token_ids = tokens(prompt_len, 7 + salt, 3 + 11 * salt, 512);
  r.max_tokens = 24;
  r.ignore_eos = true;
  r.sampling.temperature = temperature;
  r.sampling.top_p = temperature > 0 ? 0.9f : 1.0f;
  r.sampling.seed = seed;
  return r;
}

struct EngineRun {
  std::vector<std::vector<int32_t>> tokens;  // per request, in submission order
  uint64_t num_preemptions = 0;
  uint64_t prefix_cache_hits = 0;  // tokens
};

EngineRun run_engine(Device device, const Model& model, const EngineConfig& config,
                     const std::vector<EngineRequest>& requests) {
  EngineRun out;
  auto runner = make_runner(device, model, config.scheduler.num_blocks, config);
  EXPECT_NE(runner, nullptr);
  if (runner == nullptr) return out;
  Engine engine(config, std::move(runner));
  std::mutex mutex;
  std::condition_variable done;
  std::map<int64_t, std::vector<int32_t>> by_id;
  int num_finished = 0;
  std::vector<int64_t> ids;
  for (const EngineRequest& r : requests) {
    auto id = engine.submit(r, [&](const RequestOutput& o) {
      std::lock_guard<std::mutex> lock(mutex);
      auto& t = by_id[o.request_id];
      t.insert(t.end(), o.new_token_ids.begin(), o.new_token_ids.end());
      if (o.finished) ++num_finished;
      done.notify_all();
    });
    EXPECT_TRUE(id.is_ok()) << id.status().to_string();
    ids.push_back(id.is_ok() ? *id : -1);
  }
  engine.start();
  {
    std::unique_lock<std::mutex> lock(mutex);
    EXPECT_TRUE(
        done.wait_for(lock, std::chrono::seconds(120), [&] { return num_finished == static_cast<int>(ids.size()); }));
  }
  engine.stop();
  out.num_preemptions = engine.metrics().num_preemptions;
  out.prefix_cache_hits = engine.metrics().prefix_cache_hits;
  std::lock_guard<std::mutex> lock(mutex);
  for (int64_t id : ids) out.tokens.push_back(by_id[id]);
  return out;
}

// The request's logits biased and penalised by its own tokens, and cut by min-p.
EngineRequest processed(EngineRequest r) {
  r.sampling.repetition_penalty = 1.3f;
  r.sampling.frequency_penalty = 0.4f;
  r.sampling.presence_penalty = 0.3f;
  r.sampling.logit_bias = {{17, 2.0f}, {5, -3.0f}};
  r.sampling.min_p = 0.05f;
  return r;
}

// The target (greedy, then seeded sampling, then seeded sampling with logit bias, penalties and
// min-p) alone, third of six mixed requests with chunked prefill, and the same six in a KV cache
// small enough to preempt and recompute: one output.
TEST_P(Determinism, EngineOutputsAloneAmidABatchAndAfterPreemptionAreIdentical) {
  SKIP_IF_DEVICE_MISSING(GetParam().device);
  auto model = load_model(GetParam().precision);
  ASSERT_NE(model, nullptr);
  for (const int variant : {0, 1, 2}) {
    SCOPED_TRACE(variant == 0 ? "greedy" : variant == 1 ? "seeded sampling" : "penalised seeded sampling");
    const float temperature = variant == 0 ? 0.0f : 0.8f;
    EngineRequest target = request(45, 1, temperature, 4242);
    if (variant == 2) target = processed(target);
    std::vector<EngineRequest> mixed = {request(70, 2, 0.0f, 0), request(9, 3, 0.7f, 7),  target,
                                        request(33, 4, 1.0f, 9), request(58, 5, 0.0f, 0), request(21, 6, 0.9f, 11)};
    if (variant == 2) mixed[4] = processed(mixed[4]);  // a greedy neighbour with penalties too
    const EngineRun alone = run_engine(GetParam().device, *model, engine_config(kNumBlocks, 64), {target});
    const EngineRun batched = run_engine(GetParam().device, *model, engine_config(kNumBlocks, 64), mixed);
    // 12 blocks of 16 tokens for four running sequences of up to 94 tokens: preemption.
    const EngineRun preempted = run_engine(GetParam().device, *model, engine_config(12, 32), mixed);
    ASSERT_EQ(alone.tokens.size(), 1u);
    ASSERT_EQ(batched.tokens.size(), mixed.size());
    ASSERT_EQ(preempted.tokens.size(), mixed.size());
    EXPECT_EQ(alone.tokens[0].size(), 24u);
    EXPECT_EQ(batched.tokens[2], alone.tokens[0]) << "amid a batch";
    EXPECT_GT(preempted.num_preemptions, 0u) << "the small cache was meant to preempt";
    EXPECT_EQ(preempted.tokens[2], alone.tokens[0]) << "after preemption";
    for (size_t i = 0; i < mixed.size(); ++i) EXPECT_EQ(preempted.tokens[i], batched.tokens[i]) << "request " << i;
  }
}

// Six requests sharing a 50-token prefix (a system prompt) with different suffixes, greedy and
// seeded: with prefix caching the later ones take the prefix's cached blocks, in an ample
// cache and in one small enough to evict and preempt; every output equals the run without it.
TEST_P(Determinism, PrefixCachingChangesNoOutput) {
  SKIP_IF_DEVICE_MISSING(GetParam().device);
  auto model = load_model(GetParam().precision);
  ASSERT_NE(model, nullptr);
  const std::vector<int32_t> prefix = tokens(50, 13, 5, 512);
  std::vector<EngineRequest> requests;
  for (int32_t i = 0; i < 6; ++i) {
    EngineRequest r = request(4 + 3 * i, 10 + i, i % 2 == 0 ? 0.0f : 0.8f, 100 + i);
    r.prompt_token_ids.insert(r.prompt_token_ids.begin(), prefix.begin(), prefix.end());
    requests.push_back(std::move(r));
  }
  for (const int32_t num_blocks : {kNumBlocks, 14}) {
    SCOPED_TRACE(std::to_string(num_blocks) + " blocks");
    EngineConfig config = engine_config(num_blocks, 64);
    const EngineRun plain = run_engine(GetParam().device, *model, config, requests);
    config.scheduler.enable_prefix_caching = true;
    const EngineRun cached = run_engine(GetParam().device, *model, config, requests);
    ASSERT_EQ(cached.tokens.size(), requests.size());
    EXPECT_EQ(plain.prefix_cache_hits, 0u);
    EXPECT_GT(cached.prefix_cache_hits, 0u) << "later requests were meant to find the prefix";
    for (size_t i = 0; i < requests.size(); ++i) {
      EXPECT_EQ(cached.tokens[i].size(), 24u);
      EXPECT_EQ(cached.tokens[i], plain.tokens[i]) << "request " << i;
    }
  }
}

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  for (Device d : {Device::kCpu, Device::kCpuSplit, Device::kCuda}) {
    for (TinyPrecision p :
         {TinyPrecision::kFp16, TinyPrecision::kFp8, TinyPrecision::kW4A16Rtn, TinyPrecision::kW4A16GptqActOrder}) {
      cases.push_back({d, p});
    }
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(DevicesAndPrecisions, Determinism, ::testing::ValuesIn(all_cases()), case_name);

}  // namespace
}  // namespace crosspoint
