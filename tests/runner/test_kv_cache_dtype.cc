// --kv-cache-dtype resolved once per device: what the blocks store.
#include <gtest/gtest.h>

#include "runner/kv_cache_dtype.h"

namespace crosspoint {
namespace {

TEST(KvCacheDtype, AutoIsTheDevicesOwnAndFp8IsE4m3OnBoth) {
  EXPECT_EQ(resolve_kv_dtype("auto", "cpu")->storage, DType::kF32);
  EXPECT_EQ(resolve_kv_dtype("auto", "cuda")->storage, DType::kF16);
  for (const char* device : {"cpu", "cuda"})
    for (const char* text : {"fp8", "fp8_e4m3"}) {
      auto kv = resolve_kv_dtype(text, device);
      ASSERT_TRUE(kv.is_ok());
      EXPECT_TRUE(kv->fp8());
      EXPECT_EQ(kv->name(), "fp8_e4m3");
    }
  EXPECT_EQ(resolve_kv_dtype("auto", "cuda")->name(), "fp16");
  auto bad = resolve_kv_dtype("fp8_e5m2", "cuda");
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("--kv-cache-dtype fp8_e5m2"), std::string::npos);
  EXPECT_FALSE(resolve_kv_dtype("auto", "tpu").is_ok());
}

}  // namespace
}  // namespace crosspoint
