// Labels of what a sweep serves: a weight precision with a KV cache dtype.
#include <gtest/gtest.h>

#include "sweep/served_label.h"
#include "sweep/sweep_options.h"

namespace crosspoint::sweep {
namespace {

TEST(ServedLabel, PrecisionAndKvDtypeRoundTrip) {
  EXPECT_EQ(served_label("w4a16", "auto"), "w4a16");
  EXPECT_EQ(served_label("w4a16", "fp8"), "w4a16+kv-fp8");
  EXPECT_EQ(weight_precision_of("w4a16+kv-fp8"), "w4a16");
  EXPECT_EQ(weight_precision_of("fp16"), "fp16");
  EXPECT_EQ(kv_cache_dtype_of("fp16+kv-fp8"), "fp8");
  EXPECT_EQ(kv_cache_dtype_of("w8a8-fp8"), "auto");  // the weights' fp8 is not the cache's
  EXPECT_EQ(served_labels({"fp16", "w4a16"}, {"auto", "fp8"}),
            (std::vector<std::string>{"fp16", "w4a16", "fp16+kv-fp8", "w4a16+kv-fp8"}));
}

TEST(ServedLabel, RankCountsRoundTrip) {
  EXPECT_EQ(served_label("fp16", "auto", "default", 2), "fp16-tp2");
  EXPECT_EQ(served_label("w8a8-fp8", "fp8", "on", 4), "w8a8-fp8-tp4+kv-fp8+prefix-cache");
  const ServedSetup s = served_setup_of("w8a8-fp8-tp4+kv-fp8+prefix-cache");
  EXPECT_EQ(s.precision, "w8a8-fp8");
  EXPECT_EQ(s.tensor_parallel_size, 4);
  EXPECT_EQ(s.kv_cache_dtype, "fp8");
  EXPECT_EQ(s.prefix_caching, "on");
  EXPECT_EQ(tensor_parallel_size_of("fp16"), 1);
  EXPECT_EQ(weight_precision_of("fp16-tp2"), "fp16");
  EXPECT_EQ(quality_label_of("w4a16-tp2+kv-fp8+no-prefix-cache"), "w4a16+kv-fp8");  // one evaluation
  EXPECT_EQ(weight_precision_of("my-tp"), "my-tp");                                 // a precision name, no rank count
  EXPECT_EQ(weight_precision_of("x-tp0"), "x-tp0");
  EXPECT_EQ(served_labels({"fp16", "w4a16"}, {"auto"}, {"default"}, {1, 2}),
            (std::vector<std::string>{"fp16", "w4a16", "fp16-tp2", "w4a16-tp2"}));
}

TEST(ServedLabel, RankCountsAreCheckedWithTheOptions) {
  SweepOptions o;
  o.report_only = true;
  o.precisions = {"fp16"};
  o.concurrency = {1};
  o.tensor_parallel_sizes = {1, 1};
  EXPECT_NE(validate_sweep_options(o).message().find("given twice"), std::string::npos);
  o.tensor_parallel_sizes = {0};
  EXPECT_NE(validate_sweep_options(o).message().find("--tensor-parallel-sizes: 0"), std::string::npos);
  o.tensor_parallel_sizes = {1, 3};
  EXPECT_TRUE(validate_sweep_options(o).is_ok()) << validate_sweep_options(o).message();
  o.device = "cuda";  // a GPU a rank (serve refuses ranks past the GPUs present)
  EXPECT_TRUE(validate_sweep_options(o).is_ok()) << validate_sweep_options(o).message();
  o.device = "cpu";
  o.engine = "llama.cpp";
  EXPECT_NE(validate_sweep_options(o).message().find("--engine crosspoint only"), std::string::npos);
}

TEST(ServedLabel, KvDtypesAreCheckedWithTheOptions) {
  SweepOptions o;
  o.report_only = true;  // no executable needed
  o.precisions = {"fp16"};
  o.concurrency = {1};
  o.kv_cache_dtypes = {"auto", "fp4"};
  EXPECT_NE(validate_sweep_options(o).message().find("'fp4' (auto or fp8)"), std::string::npos);
  o.kv_cache_dtypes = {"fp8", "fp8"};
  EXPECT_NE(validate_sweep_options(o).message().find("given twice"), std::string::npos);
  o.kv_cache_dtypes = {"auto", "fp8"};
  EXPECT_TRUE(validate_sweep_options(o).is_ok()) << validate_sweep_options(o).message();
  o.device = "cuda";  // the GPU has an fp8 cache too
  EXPECT_TRUE(validate_sweep_options(o).is_ok()) << validate_sweep_options(o).message();
}

}  // namespace
}  // namespace crosspoint::sweep
