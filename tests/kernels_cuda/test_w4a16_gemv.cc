// W4A16 small-batch kernel (w4a16_gemv): the launch-shape logic on the host, then the
// kernel against the double-precision GPTQ reference for every batch size 1..8 at awkward
// shapes, forced warp counts (warps with no chunks, groups split between warps), act-order,
// strided rows, repeated launches (bitwise equal), activations the shared-memory ring cannot
// take (not 16-byte aligned: the same bits from global loads) and w4a16_gemm's dispatch to it.
#include <gtest/gtest.h>

#include <memory>
#include <tuple>

#include "kernels/cuda/w4a16_gemm.h"
#include "kernels/cuda/w4a16_gemv.h"
#include "kernels_cuda/reference.h"
#include "kernels_cuda/w4a16_test_util.h"

namespace crosspoint::cuda {
namespace {

using testing::DeviceBuffer;
using testing::GptqLinear;
using testing::make_gptq;

// fp32 accumulation of exact int4 x fp16 products, one fp16 rounding of the output: ~5e-4.
constexpr double kTolerance = 3e-3;

// A GPTQ linear repacked and uploaded, with its activations (permuted for act-order).
struct DeviceLinear {
  GptqLinear lin;
  std::unique_ptr<DeviceBuffer<uint32_t>> weight, scales;
  std::unique_ptr<DeviceBuffer<uint16_t>> x;  // [M, x_stride] fp16, in the packed row order
  std::vector<uint16_t> x_host;               // [M, x_stride] fp16, checkpoint row order
  int m = 0;
  int64_t x_stride = 0;
};

DeviceLinear make_device_linear(uint32_t seed, int m, int n, int k, int group_size, bool act_order,
                                int64_t x_stride = 0) {
  std::mt19937 rng(seed);
  DeviceLinear d;
  d.lin = make_gptq(rng, k, n, group_size, act_order);
  d.m = m;
  d.x_stride = x_stride > 0 ? x_stride : k;
  d.x_host = testing::random_f16(rng, static_cast<size_t>(m) * d.x_stride, -1.f, 1.f);
  auto packed =
      w4a16_repack(d.lin.qweight.data(), d.lin.scales.data(), d.lin.g_idx.data(), k, n, group_size, "test.qweight");
  EXPECT_TRUE(packed.is_ok()) << packed.status().to_string();
  if (!packed.is_ok()) return d;
  d.weight = std::make_unique<DeviceBuffer<uint32_t>>(packed->weight);
  d.scales = std::make_unique<DeviceBuffer<uint32_t>>(packed->scales);
  std::vector<uint16_t> x_packed_order = d.x_host;
  if (!packed->k_perm.empty()) {  // what w4a16_permute_columns does, on the host
    for (int i = 0; i < m; ++i)
      for (int kk = 0; kk < k; ++kk)
        x_packed_order[i * d.x_stride + kk] = d.x_host[i * d.x_stride + packed->k_perm[kk]];
  }
  d.x = std::make_unique<DeviceBuffer<uint16_t>>(x_packed_order);
  return d;
}

// Runs w4a16_gemv into a NaN-poisoned y [M, y_stride] and returns all of y.
std::vector<uint16_t> run_gemv(const DeviceLinear& d, int warps_per_block = 0, int64_t y_stride = 0) {
  if (!d.weight) return {};
  if (y_stride == 0) y_stride = d.lin.n;
  DeviceBuffer<uint16_t> y(static_cast<size_t>(d.m) * y_stride);
  y.poison();
  const Status st = w4a16_gemv(d.x->get(), d.x_stride, d.weight->get(), d.scales->get(), y.get(), y_stride, d.m,
                               d.lin.n, d.lin.k, d.lin.group_size, nullptr, warps_per_block);
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  return y.download();
}

double error_vs_reference(const DeviceLinear& d, const std::vector<uint16_t>& y) {
  return testing::relative_error_f16(y, testing::w4a16_reference(d.lin, d.x_host, d.m, d.x_stride));
}

TEST(W4A16GemvShape, KeepsTheGridInOneWaveWithTwoChunksPerWarp) {
  // The 7B decode linears on 132 SMs holding 32 warps each (64 registers a thread).
  EXPECT_EQ(w4a16_gemv_shape(4608, 3584, 132, 32).warps_per_block, 10);   // qkv: 3 blocks a SM
  EXPECT_EQ(w4a16_gemv_shape(3584, 3584, 132, 32).warps_per_block, 16);   // o: 2 blocks a SM
  EXPECT_EQ(w4a16_gemv_shape(37888, 3584, 132, 32).warps_per_block, 1);   // gate_up: 18 blocks a SM
  EXPECT_EQ(w4a16_gemv_shape(3584, 18944, 132, 32).warps_per_block, 16);  // down
  EXPECT_EQ(w4a16_gemv_shape(3584, 18944, 132, 32).num_blocks, 224);
  for (int sms : {1, 7, 132}) {
    for (int max_warps : {8, 32, 48, 64}) {
      for (auto [n, k] :
           {std::pair{16, 64}, {48, 192}, {272, 320}, {4608, 3584}, {37888, 3584}, {16, 18944}, {1 << 20, 128}}) {
        const W4A16GemvShape shape = w4a16_gemv_shape(n, k, sms, max_warps);
        const int num_chunks = k / 64;
        SCOPED_TRACE(::testing::Message() << "n=" << n << " k=" << k << " sms=" << sms << " max_warps=" << max_warps);
        EXPECT_EQ(shape.num_blocks, n / 16);
        EXPECT_GE(shape.warps_per_block, 1);
        EXPECT_LE(shape.warps_per_block, 32);
        if (num_chunks >= 2) { EXPECT_GE(num_chunks / shape.warps_per_block, 2); }
        const int blocks_per_sm = (shape.num_blocks + sms - 1) / sms;
        if (blocks_per_sm <= max_warps && blocks_per_sm <= 32) {
          EXPECT_LE(blocks_per_sm * shape.warps_per_block, max_warps);
        }
      }
    }
  }
}

TEST(W4A16Gemv, RefusesBadArgumentsBeforeLaunch) {
  const auto* p16 = reinterpret_cast<const uint16_t*>(16);
  const auto* p32 = reinterpret_cast<const uint32_t*>(16);
  auto* y = reinterpret_cast<uint16_t*>(16);
  EXPECT_TRUE(w4a16_gemv(p16, 128, p32, p32, y, 64, 0, 64, 128, 128, nullptr).is_ok());  // m = 0: nothing to do
  EXPECT_EQ(w4a16_gemv(p16, 128, p32, p32, y, 64, kW4A16GemvKernelMaxRows + 1, 64, 128, 128, nullptr).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(w4a16_gemv(p16, 128, p32, p32, y, 64, -1, 64, 128, 128, nullptr).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(w4a16_gemv(p16, 104, p32, p32, y, 64, 1, 64, 100, 128, nullptr).code(), StatusCode::kUnsupported);
  EXPECT_EQ(w4a16_gemv(p16, 128, p32, p32, y, 64, 1, 40, 128, 128, nullptr).code(), StatusCode::kUnsupported);
  EXPECT_EQ(w4a16_gemv(p16, 128, p32, p32, y, 64, 1, 64, 128, 96, nullptr).code(), StatusCode::kUnsupported);
  EXPECT_EQ(w4a16_gemv(p16, 100, p32, p32, y, 64, 1, 64, 64, 64, nullptr).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(w4a16_gemv(p16, 128, p32, p32, y, 32, 1, 64, 128, 128, nullptr).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(w4a16_gemv(p16, 128, p32, p32, y, 64, 1, 64, 128, 128, nullptr, 33).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(w4a16_gemv(nullptr, 128, p32, p32, y, 64, 1, 64, 128, 128, nullptr).code(), StatusCode::kInvalidArgument);
  const Status st = w4a16_gemv(p16, 128, p32, p32, y, 64, 1, 40, 128, 128, nullptr);
  EXPECT_NE(st.message().find("n = 40"), std::string::npos) << st.to_string();
}

TEST(W4A16Gemv, MatchesReferenceForEveryBatchSize) {
  CROSSPOINT_SKIP_WITHOUT_GPU();
  struct Case {
    int n, k, g;
  };
  // K = 320 with G = 128: a partial last group; K = 64: one chunk; G = -1: one group.
  const Case small[] = {{16, 64, -1},    {48, 192, 64},  {272, 320, 128},
                        {16, 18944, 64}, {48, 3584, -1}, {272, 18944, 128}};
  uint32_t seed = 200;
  for (int m = 1; m <= kW4A16GemvKernelMaxRows; ++m) {
    for (const Case& c : small) {
      const DeviceLinear d = make_device_linear(seed++, m, c.n, c.k, c.g, false);
      EXPECT_LT(error_vs_reference(d, run_gemv(d)), kTolerance)
          << "m=" << m << " n=" << c.n << " k=" << c.k << " g=" << c.g;
    }
  }
  for (int m : {1, 4, 6, 8}) {  // a full 7B qkv shape
    const DeviceLinear d = make_device_linear(seed++, m, 4608, 3584, 128, false);
    EXPECT_LT(error_vs_reference(d, run_gemv(d)), kTolerance) << "m=" << m << " n=4608 k=3584";
  }
}

TEST(W4A16Gemv, EveryWarpCountMatchesReference) {
  CROSSPOINT_SKIP_WITHOUT_GPU();
  // 3 and 5 chunks over up to 32 warps: warps with no chunk, groups (G = 64: one chunk,
  // G = 128: two) split between warps.
  uint32_t seed = 300;
  for (int warps : {1, 2, 3, 7, 16, 32}) {
    for (auto [m, n, k, g] :
         {std::tuple{3, 48, 192, 64}, {8, 272, 320, 128}, {1, 32, 1280, 128}, {7, 48, 192, 64}, {6, 272, 320, 128}}) {
      const DeviceLinear d = make_device_linear(seed++, m, n, k, g, false);
      EXPECT_LT(error_vs_reference(d, run_gemv(d, warps)), kTolerance) << "warps=" << warps << " m=" << m << " k=" << k;
    }
  }
}

TEST(W4A16Gemv, ActOrderMatchesReference) {
  CROSSPOINT_SKIP_WITHOUT_GPU();
  for (auto [m, n, k] : {std::tuple{5, 64, 512}, {1, 272, 3584}, {8, 48, 1024}, {7, 64, 512}}) {
    const DeviceLinear d = make_device_linear(400 + m, m, n, k, 128, true);
    EXPECT_LT(error_vs_reference(d, run_gemv(d)), kTolerance) << "act-order m=" << m << " n=" << n << " k=" << k;
  }
}

TEST(W4A16Gemv, StridedRowsLeaveThePaddingAlone) {
  CROSSPOINT_SKIP_WITHOUT_GPU();
  for (int m : {6, 8}) {
    const int n = 80, k = 640;
    const int64_t x_stride = k + 72, y_stride = n + 16;
    const DeviceLinear d = make_device_linear(500, m, n, k, 128, false, x_stride);
    const std::vector<uint16_t> y = run_gemv(d, 0, y_stride);
    ASSERT_EQ(y.size(), static_cast<size_t>(m) * y_stride);
    std::vector<uint16_t> packed_y;
    for (int i = 0; i < m; ++i) {
      for (int64_t col = 0; col < y_stride; ++col) {
        if (col < n) packed_y.push_back(y[i * y_stride + col]);
        else EXPECT_EQ(y[i * y_stride + col], 0xFFFF) << "padding written at row " << i << " col " << col;
      }
    }
    EXPECT_LT(error_vs_reference(d, packed_y), kTolerance) << "m=" << m;
  }
}

TEST(W4A16Gemv, RepeatsAreBitwiseEqualAndW4A16GemmDispatchesHere) {
  CROSSPOINT_SKIP_WITHOUT_GPU();
  for (auto [m, n, k] : {std::tuple{1, 3584, 3584},
                         {2, 272, 18944},
                         {8, 4608, 3584},
                         {7, 4608, 3584},
                         {6, 272, 18944},
                         {8, 3584, 3584}}) {
    const DeviceLinear d = make_device_linear(600 + m, m, n, k, 128, false);
    const std::vector<uint16_t> first = run_gemv(d);
    EXPECT_EQ(run_gemv(d), first) << "repeat differs, m=" << m;
    // w4a16_gemm at M <= kW4A16GemvMaxRows is this kernel: same bits.
    if (m > kW4A16GemvMaxRows) continue;
    DeviceBuffer<uint16_t> y(static_cast<size_t>(m) * n);
    y.poison();
    const Status st = w4a16_gemm(d.x->get(), k, d.weight->get(), d.scales->get(), y.get(), n, m, n, k, 128, nullptr);
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    EXPECT_EQ(y.download(), first) << "w4a16_gemm differs from w4a16_gemv at m=" << m;
    EXPECT_LT(error_vs_reference(d, first), kTolerance);
  }
}

TEST(W4A16Gemv, UnalignedActivationsGiveTheRingsBits) {
  CROSSPOINT_SKIP_WITHOUT_GPU();
  // From 2 rows each warp stages its chunks' activations in shared memory with 16-byte copies;
  // x 8 bytes off that alignment is read straight from global memory instead. Same products,
  // same order: the same bits.
  for (auto [m, n, k, g] : {std::tuple{2, 48, 192, 64}, {5, 272, 3584, 128}, {8, 64, 18944, 32}}) {
    DeviceLinear d = make_device_linear(700 + m, m, n, k, g, false);
    const std::vector<uint16_t> staged = run_gemv(d);
    EXPECT_LT(error_vs_reference(d, staged), kTolerance) << "m=" << m;
    const std::vector<uint16_t> x_rows = d.x->download();
    std::vector<uint16_t> shifted(x_rows.size() + 4);
    std::copy(x_rows.begin(), x_rows.end(), shifted.begin() + 4);
    const DeviceBuffer<uint16_t> x_shifted(shifted);
    DeviceBuffer<uint16_t> y(static_cast<size_t>(m) * n);
    y.poison();
    const Status st =
        w4a16_gemv(x_shifted.get() + 4, d.x_stride, d.weight->get(), d.scales->get(), y.get(), n, m, n, k, g, nullptr);
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    EXPECT_EQ(y.download(), staged) << "m=" << m << " k=" << k;
  }
}

}  // namespace
}  // namespace crosspoint::cuda
