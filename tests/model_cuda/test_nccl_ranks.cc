// NcclRanks: the refusals and the library loading run anywhere (the asset cache holds NCCL after
// scripts/setup.sh); the collectives run over every GPU present, one rank a GPU (one GPU: a
// group of one, where a sum is the value itself).
#include "model/cuda/nccl_ranks.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "common/dtype.h"
#include "model/cuda/cuda_model.h"

namespace crosspoint::cuda {
namespace {

TEST(NcclRanks, RefusesDevicesItCannotSplitOver) {
  EXPECT_EQ(NcclRanks::create({}).status().code(), StatusCode::kInvalidArgument);
  const auto twice = NcclRanks::create({0, 0});
  EXPECT_EQ(twice.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(twice.status().message().find("device 0 given twice"), std::string::npos) << twice.status().to_string();
  EXPECT_EQ(NcclRanks::create({-1}).status().code(), StatusCode::kInvalidArgument);
  if (cuda_device_count() == 0) return;
  const auto absent = NcclRanks::create({cuda_device_count()});
  EXPECT_EQ(absent.status().code(), StatusCode::kInvalidArgument) << absent.status().to_string();
}

TEST(NcclRanks, NamesTheLibraryItCouldNotLoad) {
  const auto missing = load_nccl("/nonexistent/libnccl.so.2");
  ASSERT_FALSE(missing.is_ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(missing.status().message().find("/nonexistent/libnccl.so.2"), std::string::npos);
  const auto not_nccl = load_nccl("libm.so.6");  // a library, but not NCCL
  ASSERT_FALSE(not_nccl.is_ok());
  EXPECT_NE(not_nccl.status().message().find("not NCCL"), std::string::npos) << not_nccl.status().to_string();
}

TEST(NcclRanks, LoadsNcclAndReadsItsVersion) {
  auto nccl = load_nccl();
  ASSERT_TRUE(nccl.is_ok()) << nccl.status().to_string();
  EXPECT_GE(nccl_version(**nccl), 21800) << nccl_library_path(**nccl);  // 2.18 or later
}

// Each rank's buffer of fp16 values and f32 values; the all-reduce against the host's sum
// (exact to two ranks: one rounding of an exact sum), the all-gather against the buffers in rank
// order, and a second run against the first bit for bit.
TEST(NcclRanks, SumsAndGathersOverEveryGpu) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  std::vector<int> devices(cuda_device_count());
  for (int d = 0; d < static_cast<int>(devices.size()); ++d) devices[d] = d;
  auto ranks = NcclRanks::create(devices);
  ASSERT_TRUE(ranks.is_ok()) << ranks.status().to_string();
  const int world = (*ranks)->world_size();
  constexpr int64_t n = 4099;  // not a multiple of any chunk
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> value(-8.f, 8.f);
  std::vector<std::vector<uint16_t>> halves(world, std::vector<uint16_t>(n));
  for (auto& h : halves)
    for (auto& v : h) v = f32_to_f16(value(rng));
  std::vector<uint16_t> want(n);
  for (int64_t i = 0; i < n; ++i) {
    float sum = 0.f;
    for (int r = 0; r < world; ++r) sum += f16_to_f32(halves[r][i]);
    want[i] = f32_to_f16(sum);
  }
  std::vector<uint16_t*> data(world);
  std::vector<float*> send(world), gathered(world);
  std::vector<cudaStream_t> streams(world);
  for (int r = 0; r < world; ++r) {
    ASSERT_EQ(cudaSetDevice(devices[r]), cudaSuccess);
    ASSERT_EQ(cudaStreamCreate(&streams[r]), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&data[r], n * 2), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&send[r], n * 4), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&gathered[r], world * n * 4), cudaSuccess);
    std::vector<float> mine(n, static_cast<float>(r + 1));
    mine[0] = -0.5f * static_cast<float>(r);
    ASSERT_EQ(cudaMemcpy(send[r], mine.data(), n * 4, cudaMemcpyHostToDevice), cudaSuccess);
  }
  std::vector<uint16_t> first;
  for (int run = 0; run < 2; ++run) {
    for (int r = 0; r < world; ++r)
      ASSERT_EQ(cudaMemcpy(data[r], halves[r].data(), n * 2, cudaMemcpyHostToDevice), cudaSuccess);
    const Status st = (*ranks)->every_rank([&](int r) -> Status {
      CROSSPOINT_RETURN_IF_ERROR((*ranks)->all_reduce_sum(r, data[r], n, DType::kF16, streams[r]));
      return (*ranks)->all_gather(r, send[r], gathered[r], n, DType::kF32, streams[r]);
    });
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    for (int r = 0; r < world; ++r) {
      ASSERT_EQ(cudaSetDevice(devices[r]), cudaSuccess);
      ASSERT_EQ(cudaStreamSynchronize(streams[r]), cudaSuccess);
      std::vector<uint16_t> got(n);
      ASSERT_EQ(cudaMemcpy(got.data(), data[r], n * 2, cudaMemcpyDeviceToHost), cudaSuccess);
      if (world <= 2) {
        EXPECT_EQ(got, want) << "rank " << r;
      } else {  // more ranks: NCCL's order of additions, within a few fp16 roundings
        for (int64_t i = 0; i < n; ++i)
          ASSERT_NEAR(f16_to_f32(got[i]), f16_to_f32(want[i]), 0.02f * world) << "rank " << r << " value " << i;
      }
      if (r == 0 && run == 0) first = got;
      EXPECT_EQ(got, first) << "rank " << r << " run " << run;  // every rank and run the same bits
      std::vector<float> all(world * n);
      ASSERT_EQ(cudaMemcpy(all.data(), gathered[r], world * n * 4, cudaMemcpyDeviceToHost), cudaSuccess);
      for (int from = 0; from < world; ++from) {
        EXPECT_EQ(all[from * n], -0.5f * static_cast<float>(from)) << "rank " << r;
        EXPECT_EQ(all[from * n + n - 1], static_cast<float>(from + 1)) << "rank " << r;
      }
    }
  }
  const Status bad = (*ranks)->all_reduce_sum(world, data[0], n, DType::kF16, streams[0]);
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument) << bad.to_string();
  EXPECT_EQ((*ranks)->all_reduce_sum(0, data[0], n, DType::kI8, streams[0]).code(), StatusCode::kInvalidArgument);
  for (int r = 0; r < world; ++r) {
    cudaSetDevice(devices[r]);
    cudaFree(data[r]);
    cudaFree(send[r]);
    cudaFree(gathered[r]);
    cudaStreamDestroy(streams[r]);
  }
}

}  // namespace
}  // namespace crosspoint::cuda
