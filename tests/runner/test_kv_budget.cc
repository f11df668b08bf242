// The CUDA runner's KV budget arithmetic (runner/kv_budget.h): host-only, no GPU needed.
#include <gtest/gtest.h>

#include "runner/kv_budget.h"

namespace crosspoint {
namespace {

TEST(KvBudgetTest, GivesWhatIsLeftUnderTheFraction) {
  KvBudgetInputs in;
  in.total_bytes = 100ull << 30;
  in.free_bytes = 80ull << 30;  // 20 GiB in use (weights, activations)
  in.gpu_memory_utilization = 0.9;
  in.reserve_bytes = 1ull << 30;
  in.bytes_per_block = 1ull << 20;
  auto budget = kv_budget_for_utilization(in);
  ASSERT_TRUE(budget.is_ok()) << budget.status().to_string();
  // 90 GiB allowed - 20 in use - 1 reserved = 69 GiB of 1 MiB blocks.
  EXPECT_EQ(budget->num_blocks, 69 * 1024);
  EXPECT_EQ(budget->kv_bytes, 69ull << 30);
  EXPECT_EQ(budget->used_bytes, 20ull << 30);
}

TEST(KvBudgetTest, NeverMoreThanIsFree) {
  KvBudgetInputs in;
  in.total_bytes = 100ull << 30;
  in.free_bytes = 10ull << 30;  // another process holds most of the GPU
  in.gpu_memory_utilization = 1.0;
  in.bytes_per_block = 1ull << 30;
  auto budget = kv_budget_for_utilization(in);
  ASSERT_TRUE(budget.is_ok());
  EXPECT_EQ(budget->num_blocks, 10);
}

TEST(KvBudgetTest, AMemoryBudgetCountsThisProcessOnly) {
  KvBudgetInputs in;
  in.total_bytes = 141ull << 30;  // an H200
  in.free_bytes = 100ull << 30;   // other processes hold 25 GiB beside our 16
  in.gpu_memory_utilization = 0.9;
  in.memory_budget_bytes = 24ull << 30;  // an L4's worth
  in.own_bytes = 16ull << 30;            // weights, activations, workspaces
  in.reserve_bytes = 1ull << 30;
  in.bytes_per_block = 1ull << 20;
  auto budget = kv_budget_for_utilization(in);
  ASSERT_TRUE(budget.is_ok()) << budget.status().to_string();
  EXPECT_EQ(budget->num_blocks, 7 * 1024);  // 24 - 16 - 1 GiB, whatever the GPU's size
  in.free_bytes = 5ull << 30;               // but never more than is free
  EXPECT_EQ(kv_budget_for_utilization(in)->num_blocks, 4 * 1024);
  in.free_bytes = 100ull << 30;
  in.own_bytes = 24ull << 30;  // the weights alone fill the budget
  auto none = kv_budget_for_utilization(in);
  ASSERT_FALSE(none.is_ok());
  EXPECT_NE(none.status().message().find("--memory-budget"), std::string::npos) << none.status().to_string();
}

TEST(KvBudgetTest, NoRoomIsAClearError) {
  KvBudgetInputs in;
  in.total_bytes = 100ull << 30;
  in.free_bytes = 60ull << 30;
  in.gpu_memory_utilization = 0.3;
  in.bytes_per_block = 1ull << 20;
  auto budget = kv_budget_for_utilization(in);
  ASSERT_FALSE(budget.is_ok());
  EXPECT_NE(budget.status().message().find("--gpu-memory-utilization"), std::string::npos);
  in.gpu_memory_utilization = 1.5;
  EXPECT_FALSE(kv_budget_for_utilization(in).is_ok());
}

}  // namespace
}  // namespace crosspoint
