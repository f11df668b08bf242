// The CPU ceiling kernels against their plain reference at awkward sizes, and a quick
// measurement that must give positive, finite rates.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "analysis/cpu_ceilings.h"
#include "analysis/hardware_json.h"
#include "common/dtype.h"
#include <nlohmann/json.hpp>

namespace crosspoint::analysis {
namespace {

struct Size {
  int64_t m, n, k;
};

TEST(CpuCeilings, BlockedGemmMatchesReferenceAtAwkwardSizes) {
  ThreadPool pool(3);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1, 1);
  for (Size s : {Size{1, 1, 1}, Size{7, 300, 129}, Size{37, 53, 71}, Size{9, 257, 256}, Size{17, 5, 400}}) {
    std::vector<float> a(static_cast<size_t>(s.m * s.k)), b(static_cast<size_t>(s.k * s.n));
    for (float& x : a) x = dist(rng);
    for (float& x : b) x = f16_to_f32(f32_to_f16(dist(rng)));  // exactly representable in fp16
    std::vector<uint16_t> b_f16(b.size());
    for (size_t i = 0; i < b.size(); ++i) b_f16[i] = f32_to_f16(b[i]);
    std::vector<float> expected(static_cast<size_t>(s.m * s.n)), got(expected.size()), got_f16(expected.size());
    gemm_reference(a.data(), b.data(), expected.data(), s.m, s.n, s.k);
    gemm_f32_blocked(a.data(), b.data(), got.data(), s.m, s.n, s.k, pool);
    gemm_f32_f16_blocked(a.data(), b_f16.data(), got_f16.data(), s.m, s.n, s.k, pool);
    // fp32 accumulation over k terms of magnitude <= 1: error grows like k * 2^-24.
    const double tolerance = 1e-6 * static_cast<double>(s.k) + 1e-6;
    for (size_t i = 0; i < expected.size(); ++i) {
      ASSERT_NEAR(got[i], expected[i], tolerance) << s.m << "x" << s.n << "x" << s.k << " at " << i;
      ASSERT_NEAR(got_f16[i], expected[i], tolerance) << s.m << "x" << s.n << "x" << s.k << " at " << i;
    }
  }
}

TEST(CpuCeilings, ParallelSumIsExact) {
  ThreadPool pool(2);
  std::vector<float> data(1000003);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<float>(i % 5);
  double expected = 0;
  for (float x : data) expected += x;
  EXPECT_DOUBLE_EQ(parallel_sum(data.data(), static_cast<int64_t>(data.size()), pool), expected);
}

TEST(CpuCeilings, QuickMeasurementIsPositiveAndRoundTripsThroughJson) {
  ThreadPool pool(2);
  CpuMeasureOptions options;
  options.bandwidth_buffer_bytes = 8 << 20;
  options.num_bandwidth_repeats = 2;
  options.gemm_size = 96;
  options.num_gemm_repeats = 1;
  const CpuMeasurement measured = measure_cpu(options, pool);
  EXPECT_GT(measured.read_bandwidth_gb_s, 0.05);
  EXPECT_GT(measured.fp32_gemm_tflops, 1e-5);
  EXPECT_GT(measured.fp16_gemm_tflops, 1e-5);
  EXPECT_TRUE(std::isfinite(measured.read_bandwidth_gb_s));
  EXPECT_EQ(measured.num_threads, 2);
  const HardwareCeilings ceilings = measured.as_ceilings();
  auto back = ceilings_from_json(ceilings_to_json(ceilings), "test");
  ASSERT_TRUE(back.is_ok()) << back.status().to_string();
  EXPECT_DOUBLE_EQ(back->bandwidth_gb_s, ceilings.bandwidth_gb_s);
  EXPECT_DOUBLE_EQ(back->fp16_tflops, ceilings.fp16_tflops);
  EXPECT_EQ(back->name, ceilings.name);
}

TEST(HardwareTable, LookupAndRidgePoints) {
  auto l4 = find_datasheet("nvidia-l4");
  ASSERT_TRUE(l4.is_ok());
  EXPECT_NEAR(critical_intensity(l4->fp16_tflops, l4->bandwidth_gb_s), 403.3, 0.1);
  EXPECT_NEAR(critical_intensity(l4->fp8_tflops, l4->bandwidth_gb_s), 806.7, 0.1);
  // Ridge points in shared/docs/reference/kernels-and-roofline.md section 6.
  EXPECT_NEAR(critical_intensity(find_datasheet("h100")->fp16_tflops, 3350), 295, 0.5);
  EXPECT_NEAR(critical_intensity(find_datasheet("H200")->fp16_tflops, 4800), 206, 0.5);
  EXPECT_NEAR(critical_intensity(find_datasheet("a100 40gb")->fp16_tflops, 1555), 201, 0.5);
  EXPECT_EQ(find_datasheet("RTX-4090")->name, "RTX 4090");
  auto unknown = find_datasheet("Z9000");
  ASSERT_FALSE(unknown.is_ok());
  EXPECT_NE(unknown.status().message().find("L4"), std::string::npos);  // lists the known names
  EXPECT_FALSE(ceilings_from_json(nlohmann::json::parse(R"({"name": "x"})"), "hw.json").is_ok());
}

}  // namespace
}  // namespace crosspoint::analysis
