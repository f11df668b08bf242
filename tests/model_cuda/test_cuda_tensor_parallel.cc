// The CUDA model split over tensor-parallel ranks (CudaModelOptions::share) against the whole
// CUDA model, on the tiny checkpoints: two ranks that are threads of this process on one GPU,
// summing through the host (NCCL refuses two ranks on one device), so the partitioning of every
// GPU kernel is tested without a second GPU. Skips without a GPU.
//
// Tolerance against one rank, of the row's logit scale: the split sums each of o_proj's and
// down_proj's outputs as two fp16 partials, one more fp16 rounding a layer (2e-2, as the GPU
// against the CPU); where activations are quantised, a row shard's dynamic scales come from the
// rank's own inputs (as vLLM's), another quantisation of the same values (8e-2).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "common/dtype.h"
#include "model/cuda/cuda_model.h"
#include "model/cuda/nccl_ranks.h"
#include "model/cuda/tensor_parallel_comm.h"
#include "model/model_test_util.h"
#include "model/tensor_parallel_model.h"
#include "runner/cuda/cuda_follower_ranks.h"
#include "runner/cuda/cuda_model_runner.h"
#include "model_cuda/cuda_test_util.h"

namespace crosspoint {
namespace {

using cuda_testing::TinyPrecision;

// Ranks that are threads on one GPU: each sum brings every rank's values (f32, f16 or bf16) to
// the host, adds them in rank order in f32 and rounds once, the same bits on every rank; a
// gather copies every rank's values back in rank order.
class HostSumComm : public cuda::TensorParallelComm {
 public:
  explicit HostSumComm(int world) : world_(world), calls_(world), parts_(world) {}
  int world_size() const override { return world_; }
  Status all_reduce_sum(int rank, void* data, int64_t n, DType dtype, cudaStream_t stream) override {
    const size_t bytes = static_cast<size_t>(n) * dtype_size(dtype);
    bool ok = false;
    CROSSPOINT_RETURN_IF_ERROR(post_part(rank, data, bytes, stream, &ok));
    std::vector<uint8_t> sum(bytes);
    for (int64_t i = 0; i < n; ++i) {
      float acc = 0.0f;
      for (int r = 0; r < world_; ++r) acc += value(parts_[r], i, dtype);
      store(sum, i, acc, dtype);
    }
    if (!meet(rank)) return internal_error(stuck(rank));  // all have read the parts before any rank's next call
    const bool back = cudaMemcpyAsync(data, sum.data(), bytes, cudaMemcpyHostToDevice, stream) == cudaSuccess &&
                      cudaStreamSynchronize(stream) == cudaSuccess;
    return ok && back ? Status::ok() : internal_error("HostSumComm: a copy failed");
  }

  Status all_gather(int rank, const void* send, void* recv, int64_t n, DType dtype, cudaStream_t stream) override {
    const size_t bytes = static_cast<size_t>(n) * dtype_size(dtype);
    bool ok = false;
    CROSSPOINT_RETURN_IF_ERROR(post_part(rank, send, bytes, stream, &ok));
    bool back = true;
    for (int r = 0; r < world_ && back; ++r)
      back = cudaMemcpyAsync(static_cast<uint8_t*>(recv) + r * bytes, parts_[r].data(), bytes, cudaMemcpyHostToDevice,
                             stream) == cudaSuccess;
    back = back && cudaStreamSynchronize(stream) == cudaSuccess;
    if (!meet(rank)) return internal_error(stuck(rank));  // all copied before any rank's next call
    return ok && back ? Status::ok() : internal_error("HostSumComm: a copy failed");
  }

 private:
  // Copies the rank's part of this call to the host (*copied: whether the copy worked) and waits
  // until every rank's is there.
  Status post_part(int rank, const void* src, size_t bytes, cudaStream_t stream, bool* copied) {
    std::vector<uint8_t>& mine = parts_[rank];
    mine.resize(bytes);
    *copied = cudaMemcpyAsync(mine.data(), src, bytes, cudaMemcpyDeviceToHost, stream) == cudaSuccess &&
              cudaStreamSynchronize(stream) == cudaSuccess;
    ++calls_[rank];
    return meet(rank) ? Status::ok() : internal_error(stuck(rank));
  }
  // A barrier that gives up after a minute (a rank that failed, or a kernel that never ended),
  // saying so at once: the test fails instead of hanging.
  bool meet(int rank) {
    std::unique_lock<std::mutex> lock(mutex_);
    const uint64_t generation = generation_;
    if (++waiting_ == world_) {
      waiting_ = 0;
      ++generation_;
      met_.notify_all();
      return true;
    }
    if (met_.wait_for(lock, std::chrono::seconds(60), [&] { return generation_ != generation; })) return true;
    std::fprintf(stderr, "%s\n", stuck(rank).c_str());
    return false;
  }
  std::string stuck(int rank) const {
    std::string calls;
    for (int r = 0; r < world_; ++r) calls += " rank " + std::to_string(r) + ": " + std::to_string(calls_[r]) + ";";
    return "HostSumComm: rank " + std::to_string(rank) +
           " waited 60 s for the other ranks (sums called so far:" + calls + ")";
  }
  static float value(const std::vector<uint8_t>& part, int64_t i, DType dtype) {
    if (dtype == DType::kF32) {
      float v;
      std::memcpy(&v, part.data() + i * 4, 4);
      return v;
    }
    uint16_t h;
    std::memcpy(&h, part.data() + i * 2, 2);
    return dtype == DType::kBF16 ? bf16_to_f32(h) : f16_to_f32(h);
  }
  static void store(std::vector<uint8_t>& out, int64_t i, float v, DType dtype) {
    if (dtype == DType::kF32) {
      std::memcpy(out.data() + i * 4, &v, 4);
      return;
    }
    const uint16_t h = dtype == DType::kBF16 ? f32_to_bf16(v) : f32_to_f16(v);
    std::memcpy(out.data() + i * 2, &h, 2);
  }

 private:
  int world_;
  std::mutex mutex_;
  std::condition_variable met_;
  int waiting_ = 0;
  uint64_t generation_ = 0;
  std::vector<std::atomic<int>> calls_;      // [rank] sums called
  std::vector<std::vector<uint8_t>> parts_;  // [rank] the current call's values
};

// each(rank) on a thread per rank, all at once; the first error.
Status on_every_rank(int world, const std::function<Status(int)>& each) {
  std::vector<Status> status(world);
  {
    std::vector<std::jthread> threads;
    for (int r = 0; r < world; ++r)
      threads.emplace_back([&, r] {
        status[r] = each(r);
        if (!status[r].is_ok()) std::fprintf(stderr, "rank %d: %s\n", r, status[r].to_string().c_str());
      });
  }
  for (const Status& s : status)
    if (!s.is_ok()) return s;
  return Status::ok();
}

bool quantises_activations(TinyPrecision p) { return p == TinyPrecision::kFp8 || p == TinyPrecision::kW8A8Int8; }

class CudaTensorParallelTest : public ::testing::TestWithParam<TinyPrecision> {};

// A prefill of two sequences and three decodes, the same batches through the whole model and
// the two ranks (each on a cache of its KV heads): both ranks' logits are the same bits, within
// the tolerance of the whole model's, and a second run of the same steps gives the same bits.
TEST_P(CudaTensorParallelTest, TwoRanksOnOneGpuGiveTheWholeModelsLogits) {
  SKIP_WITHOUT_GPU();
  const TinyPrecision precision = GetParam();
  auto cpu = cuda_testing::load_tiny_model(precision);
  ASSERT_NE(cpu, nullptr);
  auto tp = TensorParallelModel::create(*cpu, 2);
  ASSERT_TRUE(tp.is_ok()) << tp.status().to_string();
  constexpr int32_t kBlocks = 32, kMaxBlocksPerSeq = 8, kBlockSize = 16, kWorld = 2;
  cuda::CudaModelOptions options;
  options.max_num_tokens = 64;
  options.max_num_seqs = 4;
  options.max_model_len = kMaxBlocksPerSeq * kBlockSize;
  auto whole = cuda_testing::make_cuda_model(*cpu, options, kBlocks);
  ASSERT_TRUE(whole.is_ok()) << whole.status().to_string();

  HostSumComm comm(kWorld);
  std::vector<cuda_testing::CudaModelOnCache> ranks(kWorld);
  ASSERT_TRUE(on_every_rank(kWorld, [&](int r) -> Status {
                const TensorParallelModel& split = **tp;
                cuda::CudaModelOptions o = options;
                o.share = &split.share(r);
                o.rank = r;
                o.comm = &comm;
                CROSSPOINT_ASSIGN_OR_RETURN(ranks[r], cuda_testing::make_cuda_model(*cpu, o, kBlocks));
                return Status::ok();
              }).is_ok());
  EXPECT_EQ(ranks[0].kv.shape().num_kv_heads, 1);  // the tiny model's two KV heads, one a rank

  const int32_t V = cpu->vocab_size();
  const float tol = quantises_activations(precision) ? 8e-2f : 2e-2f;
  std::vector<int32_t> prompt0, prompt1;
  for (int32_t i = 0; i < 37; ++i) prompt0.push_back((i * 31 + 5) % V);
  for (int32_t i = 0; i < 20; ++i) prompt1.push_back((i * 17 + 9) % V);

  // The steps on the ranks, each decode fed the whole model's greedy tokens of the step before
  // (recorded in `fed` on the first run, replayed on the second); rank 0's logits of each step.
  std::vector<std::vector<int32_t>> fed;
  auto run_split = [&](bool first_run) {
    testing::BatchBuilder builder(2, kMaxBlocksPerSeq, kBlockSize);
    std::vector<std::vector<float>> out;
    for (int step = 0; step < 4; ++step) {
      const ForwardBatch batch = step == 0 ? builder.build({{0, prompt0}, {1, prompt1}}, false)
                                           : builder.build({{0, {fed[step - 1][0]}}, {1, {fed[step - 1][1]}}}, false);
      const size_t rows = batch.logits_token_idx.size(), n = rows * V;
      std::vector<std::vector<float>> got(kWorld, std::vector<float>(n, NAN));
      const Status s = on_every_rank(kWorld, [&](int r) { return ranks[r].forward_host(batch, got[r].data()); });
      EXPECT_TRUE(s.is_ok()) << "step " << step << ": " << s.to_string();
      EXPECT_EQ(got[0], got[1]) << "step " << step << ": the ranks' logits differ";
      if (first_run) {
        std::vector<float> want(n, NAN);
        EXPECT_TRUE(whole->forward_host(batch, want.data()).is_ok());
        std::vector<int32_t> greedy;
        for (size_t row = 0; row < rows; ++row) {
          const float* w = want.data() + row * V;
          float scale = 0.0f, worst = 0.0f;
          for (int32_t v = 0; v < V; ++v) {
            scale = std::max(scale, std::fabs(w[v]));
            worst = std::max(worst, std::fabs(w[v] - got[0][row * V + v]));
          }
          EXPECT_LE(worst, tol * scale) << "step " << step << " row " << row << ": max |split - whole| " << worst
                                        << ", logit scale " << scale;
          greedy.push_back(static_cast<int32_t>(std::max_element(w, w + V) - w));
        }
        fed.push_back(greedy);
      }
      out.push_back(got[0]);
    }
    return out;
  };
  const std::vector<std::vector<float>> first = run_split(true);
  const std::vector<std::vector<float>> second = run_split(false);
  for (size_t step = 0; step < first.size(); ++step)
    EXPECT_EQ(second[step], first[step]) << "step " << step << ": a second run gave other bits";
}

INSTANTIATE_TEST_SUITE_P(TinyCheckpoints, CudaTensorParallelTest,
                         ::testing::Values(TinyPrecision::kFp16, TinyPrecision::kFp8, TinyPrecision::kW4A16Rtn,
                                           TinyPrecision::kW8A8Int8, TinyPrecision::kQwen3Fp16),
                         [](const ::testing::TestParamInfo<TinyPrecision>& info) {
                           return cuda_testing::precision_name(info.param);
                         });

// GPTQ with act-order: a row shard (o_proj, down_proj) keeps a group index per row, which the
// GPU's W4A16 kernels do not take. A rank whose shard that is says so, naming the linear; a rank
// that loaded returns too, told another failed, instead of waiting in the profile step's sums.
TEST(CudaTensorParallel, RefusesAnActOrderRowShardOnEveryRank) {
  SKIP_WITHOUT_GPU();
  auto cpu = cuda_testing::load_tiny_model(TinyPrecision::kW4A16GptqActOrder);
  ASSERT_NE(cpu, nullptr);
  auto tp = TensorParallelModel::create(*cpu, 2);
  ASSERT_TRUE(tp.is_ok()) << tp.status().to_string();
  HostSumComm comm(2);
  std::vector<Status> status(2);
  (void)on_every_rank(2, [&](int r) -> Status {
    cuda::CudaModelOptions o;
    o.max_num_tokens = 16;
    o.max_num_seqs = 2;
    o.share = &(*tp)->share(r);
    o.rank = r;
    o.comm = &comm;
    status[r] = cuda::CudaModel::create(*cpu, o).status();
    return status[r];
  });
  int named = 0;
  for (const Status& s : status) {
    ASSERT_FALSE(s.is_ok());
    const bool names_it = s.code() == StatusCode::kUnsupported && s.to_string().find("act-order") != std::string::npos;
    named += names_it ? 1 : 0;
    EXPECT_TRUE(names_it || s.code() == StatusCode::kUnavailable) << s.to_string();
  }
  EXPECT_GE(named, 1);
}

// The engine on a two-rank runner (rank 0 the runner's model, rank 1 a follower on its thread;
// both on GPU 0, summing through the host, so graph capture fails on both and they run eagerly)
// against the one-rank runner: the same greedy tokens for four requests of different lengths
// (prefill chunks beside decodes), and again on a fresh two-rank runner, the same tokens.
TEST(CudaTensorParallel, TwoRankRunnerGivesTheOneRankRunnersGreedyTokens) {
  SKIP_WITHOUT_GPU();
  auto cpu = cuda_testing::load_tiny_model(TinyPrecision::kFp16);
  ASSERT_NE(cpu, nullptr);
  std::vector<RequestSamplingParams> greedy(4, cuda_testing::sampling(0.0f, -1, 1.0f, 0));
  const auto requests = cuda_testing::tiny_requests(greedy);
  cuda::CudaRunnerOptions runner_options;
  runner_options.enforce_eager = true;
  auto whole = cuda_testing::run_engine(cuda_testing::make_cuda_runner(*cpu, runner_options), requests);

  auto split_runner = [&]() -> std::unique_ptr<cuda::CudaModelRunner> {
    auto tp = TensorParallelModel::create(*cpu, 2);
    EXPECT_TRUE(tp.is_ok()) << tp.status().to_string();
    if (!tp.is_ok()) return nullptr;
    std::shared_ptr<const TensorParallelModel> split = std::move(tp).value();
    auto comm = std::make_shared<HostSumComm>(2);
    const EngineConfig config = cuda_testing::engine_config();
    cuda::CudaModelOptions options;
    options.max_num_tokens = config.scheduler.max_num_batched_tokens;
    options.max_num_seqs = config.scheduler.max_num_seqs;
    options.max_model_len = config.scheduler.max_model_len;
    options.share = &split->share(0);
    options.comm = comm.get();
    auto followers = cuda::CudaFollowerRanks::launch(*cpu, split, comm, {0, 0}, options);
    auto rank0 = cuda::CudaModel::create(*cpu, options);
    const Status created = followers->wait_created();
    EXPECT_TRUE(created.is_ok()) << created.to_string();
    EXPECT_TRUE(rank0.is_ok()) << rank0.status().to_string();
    if (!created.is_ok() || !rank0.is_ok()) return nullptr;
    cuda::CudaRunnerOptions o;
    o.num_kv_blocks = cuda_testing::kEngineBlocks;
    auto runner = cuda::CudaModelRunner::create(std::move(rank0).value(), o, std::move(followers));
    EXPECT_TRUE(runner.is_ok()) << runner.status().to_string();
    if (!runner.is_ok()) return nullptr;
    EXPECT_EQ((*runner)->kv_cache().shape().num_kv_heads, 1);
    // The host's sums cannot be captured: every rank falls back to eager steps together.
    EXPECT_TRUE((*runner)->graph_report().captured_buckets.empty());
    EXPECT_FALSE((*runner)->graph_report().fallback_reason.empty());
    return std::move(runner).value();
  };
  const auto first = cuda_testing::run_engine(split_runner(), requests);
  const auto second = cuda_testing::run_engine(split_runner(), requests);
  ASSERT_EQ(first.size(), requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    EXPECT_EQ(first[i].size(), static_cast<size_t>(cuda_testing::kOutputTokens)) << "request " << i;
    EXPECT_EQ(first[i], whole[i]) << "request " << i << ": two ranks' greedy tokens differ from one rank's";
    EXPECT_EQ(second[i], first[i]) << "request " << i << ": a second two-rank run gave other tokens";
  }
}

// A split of one rank through NCCL on the one GPU: its all-reduces and logits gather are NCCL
// calls (a group of one), captured in the decode graphs and replayed; the engine's greedy tokens
// equal the plain runner's.
TEST(CudaTensorParallel, OneRankNcclSplitCapturesItsCollectivesInGraphs) {
  SKIP_WITHOUT_GPU();
  auto nccl = cuda::NcclRanks::create({0});
  if (!nccl.is_ok()) GTEST_SKIP() << nccl.status().to_string();
  std::shared_ptr<cuda::NcclRanks> comm = std::move(nccl).value();
  auto cpu = cuda_testing::load_tiny_model(TinyPrecision::kFp16);
  ASSERT_NE(cpu, nullptr);
  std::vector<RequestSamplingParams> greedy(4, cuda_testing::sampling(0.0f, -1, 1.0f, 0));
  const auto requests = cuda_testing::tiny_requests(greedy);
  auto whole = cuda_testing::run_engine(cuda_testing::make_cuda_runner(*cpu, cuda::CudaRunnerOptions{}), requests);

  auto tp = TensorParallelModel::create(*cpu, 1);
  ASSERT_TRUE(tp.is_ok()) << tp.status().to_string();
  const EngineConfig config = cuda_testing::engine_config();
  cuda::CudaModelOptions options;
  options.max_num_tokens = config.scheduler.max_num_batched_tokens;
  options.max_num_seqs = config.scheduler.max_num_seqs;
  options.max_model_len = config.scheduler.max_model_len;
  options.share = &(*tp)->share(0);
  options.comm = comm.get();
  auto model = cuda::CudaModel::create(*cpu, options);
  ASSERT_TRUE(model.is_ok()) << model.status().to_string();
  cuda::CudaRunnerOptions o;
  o.num_kv_blocks = cuda_testing::kEngineBlocks;
  auto runner = cuda::CudaModelRunner::create(std::move(model).value(), o);
  ASSERT_TRUE(runner.is_ok()) << runner.status().to_string();
  EXPECT_EQ((*runner)->graph_report().fallback_reason, "");
  EXPECT_FALSE((*runner)->graph_report().captured_buckets.empty());
  const auto split = cuda_testing::run_engine(std::move(runner).value(), requests);
  for (size_t i = 0; i < requests.size(); ++i) EXPECT_EQ(split[i], whole[i]) << "request " << i;
}

}  // namespace
}  // namespace crosspoint
