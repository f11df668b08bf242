// The fp8 ring GEMV (GemvOptions::fp8_ring): its host plan (without a GPU), then fp8_gemv and
// fp8_gemv_from_fp16 on it against the host quantisation reference and a double-precision
// matmul of the e4m3 values, on awkward shapes (N not a multiple of 16, K tails inside a
// 64-byte step, every M to 16), forced cluster splits, strided inputs with NaN-poisoned padded
// outputs, the fused kernel's optional copies bit-exact, and bitwise repeats.
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "common/dtype.h"
#include "kernels/cuda/gemv.h"
#include "kernels_cuda/reference.h"

namespace crosspoint::cuda {
namespace {

using testing::DeviceBuffer;

constexpr double kTolerance = 2e-3;  // fp32 accumulation, one fp16 rounding (as test_gemv16)

// An H200 running the one-tile plain kernel: 58 registers, 228 KB of shared memory.
Fp8RingLimits h200_limits() {
  Fp8RingLimits l;
  l.num_sms = 132;
  l.max_warps_per_sm = 32;
  l.max_blocks_per_sm = 32;
  l.max_warps_per_block = 32;
  l.shared_bytes_per_sm = 233472;
  l.shared_bytes_per_warp = 8192;
  l.shared_bytes_per_block = 1024;
  l.clusters = true;
  return l;
}

void expect_valid_plan(const Fp8RingPlan& p, int n, int k, int m, bool fused, const Fp8RingLimits& l) {
  const int num_groups = (n + 15) / 16, num_steps = (k / 16 + 3) / 4;
  EXPECT_TRUE(p.groups_per_block >= 1 && p.groups_per_block <= 16) << p.groups_per_block;
  if (!fused) {
    EXPECT_EQ(p.groups_per_block, 1);
  }
  EXPECT_EQ(p.warps_per_block % p.groups_per_block, 0);
  EXPECT_TRUE(p.warps_per_block >= 1 && p.warps_per_block <= l.max_warps_per_block) << p.warps_per_block;
  EXPECT_TRUE(p.k_splits >= 1 && p.k_splits <= (l.clusters ? 8 : 1)) << p.k_splits;
  EXPECT_GE(p.steps_per_split * p.k_splits, num_steps);        // all of K covered
  EXPECT_LT((p.k_splits - 1) * p.steps_per_split, num_steps);  // no block without a step
  EXPECT_EQ(p.num_blocks, (num_groups + p.groups_per_block - 1) / p.groups_per_block * p.k_splits);
  const size_t ring = static_cast<size_t>(p.warps_per_block) * l.shared_bytes_per_warp;
  EXPECT_GE(p.shared_bytes, ring);
  if (fused) {
    EXPECT_GE(p.shared_bytes, ring + static_cast<size_t>(m) * p.steps_per_split * 64);  // the slice's codes
  }
  EXPECT_LE(p.shared_bytes + l.shared_bytes_per_block, static_cast<size_t>(l.shared_bytes_per_sm));
}

TEST(Fp8RingPlan, SplitsKOrGroupsColumnsWhereItPays) {
  const Fp8RingLimits l = h200_limits();
  // Plain: 224 groups of o / down are 1.7 per SM: K split; gate_up's 2368 spread as they are.
  EXPECT_GT(plan_fp8_ring_gemv(3584, 3584, 1, false, l).k_splits, 1);
  EXPECT_GT(plan_fp8_ring_gemv(3584, 18944, 1, false, l).k_splits, 1);
  EXPECT_EQ(plan_fp8_ring_gemv(37888, 3584, 1, false, l).k_splits, 1);
  // Fused: the quantisation runs once per block, so gate_up's blocks take several groups.
  EXPECT_GT(plan_fp8_ring_gemv(37888, 3584, 1, true, l).groups_per_block, 1);
  Fp8RingLimits no_clusters = l;
  no_clusters.clusters = false;
  EXPECT_EQ(plan_fp8_ring_gemv(3584, 3584, 1, false, no_clusters).k_splits, 1);
  EXPECT_EQ(plan_fp8_ring_gemv(3584, 3584, 1, false, l, 2).k_splits, 2);  // forced
  EXPECT_EQ(plan_fp8_ring_gemv(40, 48, 1, false, l, 8).k_splits, 1);      // one step: one slice
  for (bool fused : {false, true}) {
    for (int m : {1, 2, 8, 16}) {
      if (fused && m > 8) continue;
      for (int sms : {1, 7, 132}) {
        for (bool clusters : {false, true}) {
          for (auto [n, k] : {std::pair{8, 16}, {40, 48}, {37, 1040}, {4608, 3584}, {3600, 18944}, {37888, 3584}, {152064, 3584}}) {
            Fp8RingLimits lim = l;
            lim.num_sms = sms;
            lim.clusters = clusters;
            if (m > 8) {  // the two-tile kernel: blocks of <= 16 warps
              lim.max_warps_per_block = 16;
              lim.max_warps_per_sm = 24;
            }
            SCOPED_TRACE(::testing::Message() << "n=" << n << " k=" << k << " m=" << m << " fused=" << fused << " sms=" << sms
                                              << " clusters=" << clusters);
            expect_valid_plan(plan_fp8_ring_gemv(n, k, m, fused, lim), n, k, m, fused, lim);
            for (int force : {1, 3, 8}) expect_valid_plan(plan_fp8_ring_gemv(n, k, m, fused, lim, force), n, k, m, fused, lim);
          }
        }
      }
    }
  }
}

GemvOptions ring(int k_splits = 0) {
  GemvOptions o;
  o.k_splits = k_splits;
  o.fp8_on_cuda_cores = false;
  o.fp8_ring = true;
  return o;
}

// Plain problem: xq [m, x_stride] e4m3 with x_scale [m], wq [n, w_stride] with w_scale [n];
// y [m, y_stride] with y_stride > n so the padding shows stray writes.
struct PlainProblem {
  int m = 0, n = 0, k = 0;
  int64_t x_stride = 0, w_stride = 0, y_stride = 0;
  std::vector<uint8_t> xq, wq;
  std::vector<float> x_scale, w_scale;
  std::vector<double> ref;  // [m, n]
};

PlainProblem make_plain(uint32_t seed, int m, int n, int k) {
  std::mt19937 rng(seed);
  PlainProblem p;
  p.m = m, p.n = n, p.k = k;
  p.x_stride = k + 32, p.w_stride = k + 16, p.y_stride = n + 5;
  p.xq = testing::random_e4m3(rng, static_cast<size_t>(m) * p.x_stride);
  p.wq = testing::random_e4m3(rng, static_cast<size_t>(n) * p.w_stride);
  std::uniform_real_distribution<float> scale(1e-4f, 1e-3f);
  p.x_scale.resize(m);
  p.w_scale.resize(n);
  for (auto& s : p.x_scale) s = scale(rng);
  for (auto& s : p.w_scale) s = scale(rng);
  std::vector<float> xf(p.xq.size()), wf(p.wq.size());
  for (size_t i = 0; i < xf.size(); ++i) xf[i] = testing::e4m3_to_f32(p.xq[i]);
  for (size_t i = 0; i < wf.size(); ++i) wf[i] = testing::e4m3_to_f32(p.wq[i]);
  p.ref = testing::matmul_nt_ref(m, n, k, [&](int i, int kk) { return xf[i * p.x_stride + kk]; },
                                 [&](int j, int kk) { return wf[j * p.w_stride + kk]; });
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) p.ref[static_cast<size_t>(i) * n + j] *= static_cast<double>(p.x_scale[i]) * p.w_scale[j];
  return p;
}

// Runs the ring fp8_gemv into a NaN-poisoned y; returns [m, n] after checking the padding.
std::vector<uint16_t> run_plain(const PlainProblem& p, int k_splits, const std::string& where) {
  DeviceBuffer<uint8_t> xq(p.xq), wq(p.wq);
  DeviceBuffer<float> xs(p.x_scale), ws(p.w_scale);
  DeviceBuffer<uint16_t> y(static_cast<size_t>(p.m) * p.y_stride);
  y.poison();
  const Status st = fp8_gemv(xq.get(), p.x_stride, xs.get(), wq.get(), p.w_stride, ws.get(), y.get(), p.y_stride, p.m, p.n,
                             p.k, nullptr, ring(k_splits));
  EXPECT_TRUE(st.is_ok()) << st.to_string() << " " << where;
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess) << where;
  const std::vector<uint16_t> padded = y.download();
  std::vector<uint16_t> out;
  int stray = 0;
  for (int i = 0; i < p.m; ++i) {
    for (int64_t col = 0; col < p.y_stride; ++col) {
      if (col < p.n) out.push_back(padded[i * p.y_stride + col]);
      else if (padded[i * p.y_stride + col] != 0xFFFF) ++stray;
    }
  }
  EXPECT_EQ(stray, 0) << where << ": padding of y written";
  return out;
}

std::string describe(int m, int n, int k, int splits) {
  return "m=" + std::to_string(m) + " n=" + std::to_string(n) + " k=" + std::to_string(k) + " k_splits=" + std::to_string(splits);
}

TEST(Fp8GemvRing, PlainMatchesReferenceOnAwkwardShapes) {
  CROSSPOINT_SKIP_WITHOUT_GPU();
  if (!fp8_gemv_on_tensor_cores()) GTEST_SKIP() << "no e4m3 MMA on this GPU";
  uint32_t seed = 1100;
  // K = 16 / 48 / 1040: tails inside a 64-byte step; N = 8, 40, 3600 (3584 + 16).
  for (auto [n, k] : {std::pair{8, 16}, {40, 48}, {40, 1040}, {8, 192}, {40, 18944}}) {
    for (int m = 1; m <= kMmaGemvMaxRows; ++m) {
      const PlainProblem p = make_plain(seed++, m, n, k);
      EXPECT_LT(testing::relative_error_f16(run_plain(p, 0, describe(m, n, k, 0)), p.ref), kTolerance) << describe(m, n, k, 0);
    }
  }
  for (auto [m, n, k] : {std::tuple{1, 4608, 3584}, {3, 3600, 3584}, {9, 4608, 64}, {16, 3600, 192}, {2, 512, 18944}}) {
    const PlainProblem p = make_plain(seed++, m, n, k);
    EXPECT_LT(testing::relative_error_f16(run_plain(p, 0, describe(m, n, k, 0)), p.ref), kTolerance) << describe(m, n, k, 0);
  }
}

TEST(Fp8GemvRing, PlainEverySplitMatchesAndRepeatsBitwise) {
  CROSSPOINT_SKIP_WITHOUT_GPU();
  if (!fp8_gemv_on_tensor_cores()) GTEST_SKIP() << "no e4m3 MMA on this GPU";
  int major = 0;
  cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0);
  uint32_t seed = 1200;
  for (int splits : {1, 2, 4, 8}) {
    if (splits > 1 && major < 9) continue;  // clusters: sm_90+
    for (auto [m, n, k] : {std::tuple{1, 40, 1040}, {8, 72, 3584}, {12, 40, 320}, {16, 3600, 3584}, {5, 8, 48}}) {
      const PlainProblem p = make_plain(seed++, m, n, k);
      const std::string where = describe(m, n, k, splits);
      const std::vector<uint16_t> first = run_plain(p, splits, where);
      EXPECT_LT(testing::relative_error_f16(first, p.ref), kTolerance) << where;
      EXPECT_EQ(run_plain(p, splits, where), first) << "repeat differs, " << where;
    }
  }
}

// Fused problem: x [m, x_stride] fp16 uniform in [-4, 4) with an all-zero row (row 1) and a
// 60000 outlier, the padding of x filled with 1e4 (which must not count in the amax).
struct FusedProblem {
  int m = 0, n = 0, k = 0;
  int64_t x_stride = 0;
  std::vector<uint16_t> x;      // [m, x_stride] fp16
  std::vector<uint8_t> wq;      // [n, k] e4m3
  std::vector<float> w_scale;   // [n]
  std::vector<uint8_t> xq_ref;  // [m, k] e4m3, host quantisation
  std::vector<float> xs_ref;    // [m]
  std::vector<double> y_ref;    // [m, n]
};

FusedProblem make_fused(uint32_t seed, int m, int n, int k) {
  std::mt19937 rng(seed);
  FusedProblem p;
  p.m = m, p.n = n, p.k = k, p.x_stride = k + 24;
  const std::vector<uint16_t> dense = testing::random_f16(rng, static_cast<size_t>(m) * k, -4.f, 4.f);
  std::vector<uint16_t> x = dense;
  if (m > 1) std::fill(x.begin() + k, x.begin() + 2 * k, 0);
  x[0] = crosspoint::f32_to_f16(60000.f);
  p.x.assign(static_cast<size_t>(m) * p.x_stride, crosspoint::f32_to_f16(1e4f));
  for (int i = 0; i < m; ++i) std::copy(x.begin() + i * k, x.begin() + (i + 1) * k, p.x.begin() + i * p.x_stride);
  p.wq = testing::random_e4m3(rng, static_cast<size_t>(n) * k);
  p.w_scale.resize(n);
  std::uniform_real_distribution<float> scale(1e-4f, 1e-3f);
  for (auto& s : p.w_scale) s = scale(rng);
  testing::fp8_quantize_per_token_ref(x, m, k, &p.xq_ref, &p.xs_ref);
  std::vector<float> xf(p.xq_ref.size()), wf(p.wq.size());
  for (size_t i = 0; i < xf.size(); ++i) xf[i] = testing::e4m3_to_f32(p.xq_ref[i]);
  for (size_t i = 0; i < wf.size(); ++i) wf[i] = testing::e4m3_to_f32(p.wq[i]);
  p.y_ref = testing::matmul_nt_ref(m, n, k, [&](int i, int kk) { return xf[static_cast<size_t>(i) * k + kk]; },
                                   [&](int j, int kk) { return wf[static_cast<size_t>(j) * k + kk]; });
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) p.y_ref[static_cast<size_t>(i) * n + j] *= static_cast<double>(p.xs_ref[i]) * p.w_scale[j];
  return p;
}

// The ring fused kernel on one problem: y against the reference, the optional copies bit-exact,
// the zero row exactly zero, a repeat bitwise equal. Returns y [m, n].
void check_fused(const FusedProblem& p, int k_splits) {
  const int m = p.m, n = p.n, k = p.k;
  const std::string where = describe(m, n, k, k_splits) + " (fused)";
  DeviceBuffer<uint16_t> x(p.x), y(static_cast<size_t>(m) * n);
  DeviceBuffer<uint8_t> wq(p.wq), xq_out(static_cast<size_t>(m) * k);
  DeviceBuffer<float> ws(p.w_scale), xs_out(m);
  y.poison();
  xq_out.poison(0x7F);
  xs_out.poison();
  Status st = fp8_gemv_from_fp16(x.get(), p.x_stride, wq.get(), k, ws.get(), y.get(), n, m, n, k, nullptr, xq_out.get(), k,
                                 xs_out.get(), ring(k_splits));
  ASSERT_TRUE(st.is_ok()) << st.to_string() << " " << where;
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << where;
  const std::vector<uint16_t> first = y.download();
  EXPECT_LT(testing::relative_error_f16(first, p.y_ref), kTolerance) << where;
  EXPECT_EQ(xq_out.download(), p.xq_ref) << where;
  EXPECT_EQ(xs_out.download(), p.xs_ref) << where;
  for (int j = 0; j < n && m > 1; ++j) EXPECT_EQ(first[static_cast<size_t>(n) + j], 0) << "zero row, " << where;
  y.poison();
  st = fp8_gemv_from_fp16(x.get(), p.x_stride, wq.get(), k, ws.get(), y.get(), n, m, n, k, nullptr, nullptr, 0, nullptr,
                          ring(k_splits));
  ASSERT_TRUE(st.is_ok()) << st.to_string() << " " << where;
  EXPECT_EQ(y.download(), first) << "repeat (without copies) differs, " << where;
}

TEST(Fp8GemvRing, FusedMatchesReferenceWithExactCodes) {
  CROSSPOINT_SKIP_WITHOUT_GPU();
  if (!fp8_gemv_on_tensor_cores()) GTEST_SKIP() << "no e4m3 MMA on this GPU";
  int major = 0;
  cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0);
  uint32_t seed = 1300;
  for (auto [n, k] : {std::pair{8, 16}, {40, 48}, {37, 1040}, {40, 3584}, {3600, 3584}, {40, 18944}}) {
    for (int m : {1, 2, 3, 8}) {
      if (n * static_cast<int64_t>(k) > 4'000'000 && m > 2) continue;  // keeps the host reference short
      const FusedProblem p = make_fused(seed++, m, n, k);
      check_fused(p, 0);
      if (major >= 9 && k <= 3584) {
        for (int splits : {1, 2, 4, 8}) check_fused(p, splits);
      }
    }
  }
}

}  // namespace
}  // namespace crosspoint::cuda
