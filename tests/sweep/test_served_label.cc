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
