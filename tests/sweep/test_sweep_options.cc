// Option parsing and the checks made before a sweep runs anything.
#include <gtest/gtest.h>

#include "sweep/sweep_options.h"

namespace crosspoint::sweep {
namespace {

TEST(SweepOptions, PrecisionListKeepsOrderAndRejectsUnknownAndRepeats) {
  auto p = parse_precision_list("w4a16,fp16");
  ASSERT_TRUE(p.is_ok());
  EXPECT_EQ(p.value(), (std::vector<std::string>{"w4a16", "fp16"}));
  auto unknown = parse_precision_list("fp16,int3");
  ASSERT_FALSE(unknown.is_ok());
  EXPECT_NE(unknown.status().message().find("'int3'"), std::string::npos);
  EXPECT_FALSE(parse_precision_list("fp16,fp16").is_ok());
  EXPECT_FALSE(parse_precision_list("").is_ok());
}

TEST(SweepOptions, ConcurrencyListIsSortedAndUnique) {
  auto c = parse_concurrency_list("16, 1,4,4");
  ASSERT_TRUE(c.is_ok());
  EXPECT_EQ(c.value(), (std::vector<int>{1, 4, 16}));
  for (const char* bad : {"0", "1,x", "-3", "2.5", "", "1,,2"}) {
    EXPECT_FALSE(parse_concurrency_list(bad).is_ok()) << bad;
  }
}

TEST(SweepOptions, SloParsesEitherPart) {
  SweepOptions o;
  ASSERT_TRUE(parse_slo("ttft:500,tpot:50.5", o).is_ok());
  EXPECT_DOUBLE_EQ(*o.slo_ttft_ms, 500);
  EXPECT_DOUBLE_EQ(*o.slo_tpot_ms, 50.5);
  SweepOptions only_tpot;
  ASSERT_TRUE(parse_slo("tpot:20", only_tpot).is_ok());
  EXPECT_FALSE(only_tpot.slo_ttft_ms.has_value());
  for (const char* bad : {"ttft", "ttft:", "ttft:-1", "itl:5", "tpot:5ms"}) {
    SweepOptions o2;
    Status s = parse_slo(bad, o2);
    EXPECT_FALSE(s.is_ok()) << bad;
    EXPECT_NE(s.message().find("--slo"), std::string::npos);
  }
}

TEST(SweepOptions, ValidationNamesTheOption) {
  SweepOptions o;
  o.crosspoint_exe = "/bin/sh";  // any existing file
  o.precisions = {"fp16"};
  o.concurrency = {1};
  EXPECT_TRUE(validate_sweep_options(o).is_ok());
  auto expect_error = [&](SweepOptions bad, const std::string& needle) {
    Status s = validate_sweep_options(bad);
    ASSERT_FALSE(s.is_ok()) << needle;
    EXPECT_NE(s.message().find(needle), std::string::npos) << s.message();
  };
  SweepOptions b = o;
  b.num_prompts = 0;
  expect_error(b, "--num-prompts");
  b = o;
  b.device = "cuda";
  expect_error(b, "--device cuda");
  b = o;
  b.device = "tpu";
  expect_error(b, "--device");
  b = o;
  b.dataset = "alpaca";
  expect_error(b, "--dataset");
  b = o;
  b.dataset_path = "/nonexistent/sharegpt.json";
  expect_error(b, "/nonexistent/sharegpt.json");
  b = o;
  b.bisect_resolution = 0;
  expect_error(b, "--bisect-resolution");
  b = o;
  b.crosspoint_exe = "/nonexistent/crosspoint";
  expect_error(b, "/nonexistent/crosspoint");
}

}  // namespace
}  // namespace crosspoint::sweep
