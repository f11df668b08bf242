// The time-budget sample growth (a pure function of the cells measured so far) and the
// busy-machine guard's /proc and nvidia-smi parsers.
#include <gtest/gtest.h>

#include "sweep/machine_load.h"
#include "sweep/sample_growth.h"

namespace crosspoint::sweep {
namespace {

using analysis::CellMeasurement;
using analysis::Interval;
using analysis::Metric;

// A cell of one run of `wall_s` seconds with a median TPOT and its interval, and a throughput
// that is clearly separated from every other cell's (so only TPOT decides).
CellMeasurement cell(const std::string& precision, int concurrency, double tpot, double half_width, double wall_s,
                     int runs = 1) {
  CellMeasurement c;
  c.precision = precision;
  c.concurrency = concurrency;
  c.num_runs = runs;
  c.duration_s = wall_s * runs;
  c.median_tpot_ms = tpot;
  c.median_tpot_ci = Interval{tpot, tpot - half_width, tpot + half_width};
  return c;
}

TEST(SampleGrowth, NothingUndecidedNothingToRun) {
  SampleGrowthInput in;
  in.cells = {cell("fp16", 1, 3.0, 0.1, 20), cell("w4a16", 1, 2.0, 0.1, 20)};
  in.remaining_s = 1000;
  const SampleGrowthPlan plan = plan_sample_growth(in);
  EXPECT_TRUE(plan.undecided.empty());
  EXPECT_TRUE(plan.cells.empty());
  EXPECT_FALSE(plan.budget_too_small);
}

TEST(SampleGrowth, OverlappingCellsGetOneMoreRunEach) {
  SampleGrowthInput in;
  in.cells = {cell("fp16", 1, 3.0, 0.1, 20), cell("w4a16", 1, 2.0, 0.1, 20),   // decided
              cell("fp16", 4, 2.2, 0.3, 10), cell("w4a16", 4, 2.0, 0.3, 10)};  // 10 % apart, overlapping
  in.remaining_s = 100;
  in.server_start_s = 5;
  const SampleGrowthPlan plan = plan_sample_growth(in);
  ASSERT_EQ(plan.undecided.size(), 1u);
  EXPECT_EQ(plan.undecided[0].metric, Metric::kMedianTpot);
  EXPECT_EQ(plan.undecided[0].concurrency, 4);
  EXPECT_EQ(plan.undecided[0].leader, "w4a16");
  ASSERT_EQ(plan.cells.size(), 2u);
  EXPECT_EQ(plan.cells[0].precision, "fp16");
  EXPECT_EQ(plan.cells[0].concurrency, 4);
  EXPECT_EQ(plan.cells[1].precision, "w4a16");
  // two runs of 10 s (+20 %) and two server starts
  EXPECT_DOUBLE_EQ(plan.estimated_s, 2 * 12.0 + 2 * 5.0);
  EXPECT_FALSE(plan.budget_too_small);
}

TEST(SampleGrowth, TooLittleTimeLeftSaysSo) {
  SampleGrowthInput in;
  in.cells = {cell("fp16", 4, 2.2, 0.3, 10), cell("w4a16", 4, 2.0, 0.3, 10)};
  in.server_start_s = 5;
  in.remaining_s = 33;  // needs 34
  SampleGrowthPlan plan = plan_sample_growth(in);
  EXPECT_EQ(plan.undecided.size(), 1u);
  EXPECT_TRUE(plan.cells.empty());
  EXPECT_TRUE(plan.budget_too_small);
  in.remaining_s = -5;  // budget overrun
  plan = plan_sample_growth(in);
  EXPECT_TRUE(plan.cells.empty());
  EXPECT_TRUE(plan.budget_too_small);
}

TEST(SampleGrowth, CheapestComparisonsFirstWithinTheBudget) {
  SampleGrowthInput in;
  in.cells = {cell("fp16", 1, 2.2, 0.3, 60), cell("w4a16", 1, 2.0, 0.3, 60),   // 2 x 72 s
              cell("fp16", 8, 2.2, 0.3, 10), cell("w4a16", 8, 2.0, 0.3, 10)};  // 2 x 12 s
  in.server_start_s = 5;
  in.remaining_s = 60;
  const SampleGrowthPlan plan = plan_sample_growth(in);
  EXPECT_EQ(plan.undecided.size(), 2u);
  ASSERT_EQ(plan.cells.size(), 2u);
  EXPECT_EQ(plan.cells[0].concurrency, 8);
  EXPECT_EQ(plan.cells[1].concurrency, 8);
  EXPECT_TRUE(plan.budget_too_small);  // concurrency 1 did not fit
  // A server already started for one comparison is not paid for twice.
  in.remaining_s = 24 + 10 + 144;
  EXPECT_EQ(plan_sample_growth(in).cells.size(), 4u);
}

TEST(SampleGrowth, ACellAtTheRunCapIsNotGrown) {
  SampleGrowthInput in;
  in.cells = {cell("fp16", 4, 2.2, 0.3, 10, 8), cell("w4a16", 4, 2.0, 0.3, 10, 8)};
  in.remaining_s = 1000;
  in.max_runs_per_cell = 8;
  const SampleGrowthPlan plan = plan_sample_growth(in);
  EXPECT_TRUE(plan.cells.empty());
  // Plenty of time left: the cap, not the budget, stopped it.
  EXPECT_TRUE(plan.runs_capped);
  EXPECT_FALSE(plan.budget_too_small);
}

TEST(SampleGrowth, RunCostPrefersTheGuardsWallTime) {
  CellMeasurement c = cell("fp16", 4, 2.0, 0.1, 10, 2);
  EXPECT_DOUBLE_EQ(run_cost_s(c), 12.0);
  analysis::InterferenceRecord r;
  r.wall_s = 15;
  c.machine = {r, r};
  EXPECT_DOUBLE_EQ(run_cost_s(c), 18.0);
}

TEST(MachineLoad, ProcStatBusySecondsOfTheAllowedCpus) {
  const std::string stat =
      "cpu  400 0 200 9000 10 0 0 0 0 0\n"
      "cpu0 100 0 50 4000 5 10 5 2 0 0\n"
      "cpu1 300 0 150 5000 5 0 0 0 0 0\n"
      "intr 12345\n";
  auto both = busy_seconds_from_proc_stat(stat, {0, 1}, 100);
  ASSERT_TRUE(both.has_value());
  EXPECT_DOUBLE_EQ(*both, (100 + 50 + 10 + 5 + 2 + 300 + 150) / 100.0);
  auto one = busy_seconds_from_proc_stat(stat, {1}, 100);
  EXPECT_DOUBLE_EQ(*one, 4.5);
  EXPECT_FALSE(busy_seconds_from_proc_stat(stat, {7}, 100).has_value());
}

TEST(MachineLoad, PidStatWithSpacesInTheName) {
  const std::string line = "1234 (crosspoint (serve) x) S 1 1234 1234 0 -1 4194560 500 0 0 0 250 50 0 0 20 0 9 0";
  auto seconds = cpu_seconds_from_pid_stat(line, 100);
  ASSERT_TRUE(seconds.has_value());
  EXPECT_DOUBLE_EQ(*seconds, 3.0);
  EXPECT_FALSE(cpu_seconds_from_pid_stat("garbage", 100).has_value());
}

TEST(MachineLoad, LoadavgAndNvidiaSmi) {
  EXPECT_DOUBLE_EQ(*loadavg_from_text("2.12 1.44 1.59 4/94 31011\n"), 2.12);
  EXPECT_FALSE(loadavg_from_text("").has_value());
  EXPECT_EQ(other_gpu_processes("4242\n5151\n\n", 4242), 1);
  EXPECT_EQ(other_gpu_processes("", 4242), 0);
  EXPECT_EQ(throttle_reasons_from_csv("0x0000000000000004\n0x0000000000000040\n"), 0x44u);
}

TEST(MachineLoad, RecordBetweenTwoSamples) {
  MachineSample a, b;
  a.wall_s = 100;
  b.wall_s = 110;
  a.busy_cpu_s = 1000;
  b.busy_cpu_s = 1018;
  a.self_cpu_s = 1;
  b.self_cpu_s = 1.5;
  a.children_cpu_s = 10;
  b.children_cpu_s = 14;  // the bench client, reaped
  a.server_cpu_s = 50;
  b.server_cpu_s = 61.5;
  b.num_cores = 2;
  a.loadavg1 = 1.0;
  b.loadavg1 = 2.0;
  const analysis::InterferenceRecord r = interference_between(a, b);
  EXPECT_DOUBLE_EQ(r.wall_s, 10);
  EXPECT_DOUBLE_EQ(r.own_cpu_s, 16);
  EXPECT_DOUBLE_EQ(r.busy_cpu_s, 18);
  EXPECT_FALSE(analysis::classify_interference(r).interfered);  // 0.2 cores of others
  // Unknown /proc/stat: no evidence of others.
  a.busy_cpu_s = -1;
  EXPECT_DOUBLE_EQ(interference_between(a, b).busy_cpu_s, 16);
}

}  // namespace
}  // namespace crosspoint::sweep
