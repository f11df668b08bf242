// bench serve's GPU energy (gpu_energy.h): the arithmetic, which servers count as local, and
// NVML opened at run time, here through tests/bench/fake_nvml.c (two GPUs at 250 W each).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <thread>

#include "bench/gpu_energy.h"

namespace crosspoint::bench {
namespace {

TEST(GpuEnergy, SummarySumsTheDevicesAndDividesByWhatCompleted) {
  const GpuEnergyReading before{{"A", "B"}, {1000, 5000}};
  const GpuEnergyReading after{{"A", "B"}, {301000, 105000}};  // 300 J + 100 J
  const GpuEnergySummary s = summarize_gpu_energy(before, after, 2.0, 8, 400);
  ASSERT_TRUE(s.measured) << s.note;
  EXPECT_DOUBLE_EQ(s.joules, 400.0);
  EXPECT_DOUBLE_EQ(s.joules_per_request, 50.0);
  EXPECT_DOUBLE_EQ(s.joules_per_output_token, 1.0);
  EXPECT_DOUBLE_EQ(s.mean_watts, 200.0);
  EXPECT_EQ(s.devices, (std::vector<std::string>{"A", "B"}));
}

TEST(GpuEnergy, ACounterGoingBackOrDevicesChangingIsNotAMeasurement) {
  const GpuEnergySummary back = summarize_gpu_energy({{"A"}, {5000}}, {{"A"}, {4000}}, 1.0, 1, 1);
  EXPECT_FALSE(back.measured);
  EXPECT_NE(back.note.find("backwards"), std::string::npos) << back.note;
  const GpuEnergySummary changed = summarize_gpu_energy({{"A"}, {1}}, {{"A", "B"}, {2, 3}}, 1.0, 1, 1);
  EXPECT_FALSE(changed.measured);
}

TEST(GpuEnergy, OnlyServersOnThisMachineAreLocal) {
  for (const char* url :
       {"http://127.0.0.1:8000", "http://localhost:8000/", "http://[::1]:8000", "http://0.0.0.0:1", "127.0.0.2:80"}) {
    EXPECT_TRUE(is_local_url(url)) << url;
  }
  for (const char* url : {"http://10.0.0.5:8000", "https://api.example.com", "http://127example.com:80"}) {
    EXPECT_FALSE(is_local_url(url)) << url;
  }
}

TEST(GpuEnergy, ReadsNvmlsCountersAtRunTime) {
  setenv("CROSSPOINT_NVML_LIBRARY", CROSSPOINT_FAKE_NVML, 1);
  auto meter = GpuEnergyMeter::open();
  ASSERT_TRUE(meter.is_ok()) << meter.status().to_string();
  auto before = (*meter)->read();
  ASSERT_TRUE(before.is_ok()) << before.status().to_string();
  EXPECT_EQ(before->devices, (std::vector<std::string>{"Fake GPU 0", "Fake GPU 1"}));
  const auto start = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  auto after = (*meter)->read();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(after.is_ok());
  const GpuEnergySummary s = summarize_gpu_energy(*before, *after, seconds, 1, 1);
  ASSERT_TRUE(s.measured) << s.note;
  EXPECT_NEAR(s.mean_watts, 500.0, 50.0);  // two GPUs at 250 W
  unsetenv("CROSSPOINT_NVML_LIBRARY");
}

TEST(GpuEnergy, NoDriverOrNoCounterIsUnsupportedWithTheReason) {
  setenv("CROSSPOINT_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
  auto missing = GpuEnergyMeter::open();
  EXPECT_EQ(missing.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(missing.status().message().find("/nonexistent/libnvidia-ml.so.1"), std::string::npos);
  setenv("CROSSPOINT_NVML_LIBRARY", CROSSPOINT_FAKE_NVML, 1);
  setenv("FAKE_NVML_NO_ENERGY", "1", 1);
  auto no_counter = GpuEnergyMeter::open();
  EXPECT_EQ(no_counter.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(no_counter.status().message().find("no energy counter for Fake GPU 0"), std::string::npos)
      << no_counter.status().to_string();
  unsetenv("FAKE_NVML_NO_ENERGY");
  unsetenv("CROSSPOINT_NVML_LIBRARY");
}

}  // namespace
}  // namespace crosspoint::bench
