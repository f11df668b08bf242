// The busy-machine guard's classification of recorded samples (pure functions).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "analysis/interference.h"

namespace crosspoint::analysis {
namespace {

InterferenceRecord quiet_run() {
  InterferenceRecord r;
  r.wall_s = 10;
  r.num_cores = 2;
  r.busy_cpu_s = 15.5;  // the run's own 15 s plus 0.5 s of others: 0.05 cores
  r.own_cpu_s = 15;
  r.loadavg_start = 1.4;
  r.loadavg_end = 1.6;
  return r;
}

TEST(Interference, AQuietRunIsClean) {
  const InterferenceVerdict v = classify_interference(quiet_run());
  EXPECT_FALSE(v.interfered);
  EXPECT_NEAR(v.other_cores, 0.05, 1e-12);
  EXPECT_NEAR(v.own_cores, 1.5, 1e-12);
  EXPECT_TRUE(v.reason.empty());
}

TEST(Interference, OthersCpuAboveAQuarterCoreMarksTheRun) {
  InterferenceRecord r = quiet_run();
  r.busy_cpu_s = 15 + 2.6;  // 0.26 cores of others
  InterferenceVerdict v = classify_interference(r);
  EXPECT_TRUE(v.interfered);
  EXPECT_NE(v.reason.find("others used 0.26 cores"), std::string::npos) << v.reason;
  r.busy_cpu_s = 15 + 2.4;  // 0.24: under the threshold
  EXPECT_FALSE(classify_interference(r).interfered);
  InterferenceThresholds strict;
  strict.max_other_cores = 0.1;
  EXPECT_TRUE(classify_interference(r, strict).interfered);
}

TEST(Interference, LoadAverageBeyondTheRunsOwnMarksTheRun) {
  InterferenceRecord r = quiet_run();
  r.loadavg_end = 2.6;  // 2.6 - 1.5 own cores = 1.1 runnable tasks of others > 1
  InterferenceVerdict v = classify_interference(r);
  EXPECT_TRUE(v.interfered);
  EXPECT_NE(v.reason.find("load average 2.60"), std::string::npos) << v.reason;
  r.loadavg_end = 2.4;
  EXPECT_FALSE(classify_interference(r).interfered);
  // Unknown load average (-1) is not evidence.
  r.loadavg_start = r.loadavg_end = -1;
  EXPECT_FALSE(classify_interference(r).interfered);
}

TEST(Interference, GpuProcessesAndThrottlingOnlyWhenChecked) {
  InterferenceRecord r = quiet_run();
  r.gpu_other_processes = 2;
  r.gpu_throttle_reasons = 0x40;
  EXPECT_FALSE(classify_interference(r).interfered);  // nvidia-smi did not answer: skipped
  r.gpu_checked = true;
  InterferenceVerdict v = classify_interference(r);
  EXPECT_TRUE(v.interfered);
  EXPECT_NE(v.reason.find("2 other GPU processes"), std::string::npos);
  EXPECT_NE(v.reason.find("0x40"), std::string::npos);
  // Idle, application clocks and the software power cap are not interference.
  r.gpu_other_processes = 0;
  r.gpu_throttle_reasons = 0x1 | 0x2 | 0x4;
  EXPECT_FALSE(classify_interference(r).interfered);
}

TEST(Interference, ZeroWallTimeIsNotDivision) {
  InterferenceRecord r;
  EXPECT_FALSE(classify_interference(r).interfered);
}

TEST(Interference, JsonRoundTrip) {
  InterferenceRecord r = quiet_run();
  r.gpu_checked = true;
  r.gpu_throttle_reasons = 0x8;
  auto back = interference_record_from_json(interference_record_to_json(r), "x");
  ASSERT_TRUE(back.is_ok());
  EXPECT_EQ(back.value().busy_cpu_s, r.busy_cpu_s);
  EXPECT_EQ(back.value().gpu_throttle_reasons, 0x8u);
  EXPECT_TRUE(back.value().gpu_checked);
  auto bad = interference_record_from_json(nlohmann::json{{"wall_s", "ten"}}, "cells/a.json");
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("machine.wall_s"), std::string::npos);
}

}  // namespace
}  // namespace crosspoint::analysis
