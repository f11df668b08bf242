#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "common/dtype.h"

namespace crosspoint {
namespace {

TEST(DType, F16KnownValues) {
  EXPECT_EQ(f32_to_f16(1.0f), 0x3c00);
  EXPECT_EQ(f32_to_f16(-2.0f), 0xc000);
  EXPECT_EQ(f32_to_f16(65504.0f), 0x7bff);
  EXPECT_EQ(f32_to_f16(1e6f), 0x7c00);                   // overflow -> inf
  EXPECT_EQ(f32_to_f16(5.9604645e-8f), 0x0001);          // smallest subnormal
  EXPECT_EQ(f32_to_f16(2.9802322e-8f), 0x0000);          // exactly half of it: ties to even (0)
  EXPECT_EQ(f32_to_f16(1.0f + 1.0f / 2048.0f), 0x3c00);  // halfway between 1 and next: even
  EXPECT_EQ(f32_to_f16(1.0f + 3.0f / 2048.0f), 0x3c02);  // halfway, rounds up to even
  EXPECT_FLOAT_EQ(f16_to_f32(0x3555), 0.33325195f);
  EXPECT_TRUE(std::isnan(f16_to_f32(0x7e00)));
  EXPECT_TRUE(std::isinf(f16_to_f32(0xfc00)));
}

TEST(DType, F16RoundTripsEveryHalf) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = f16_to_f32(static_cast<uint16_t>(h));
    if (std::isnan(f)) continue;
    ASSERT_EQ(f32_to_f16(f), h) << "half 0x" << std::hex << h;
  }
}

TEST(DType, BF16RoundsToNearestEven) {
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3f80);
  uint32_t bits = 0x3f808000u;  // exactly halfway between 0x3f80 and 0x3f81
  float f;
  std::memcpy(&f, &bits, 4);
  EXPECT_EQ(f32_to_bf16(f), 0x3f80);
  bits = 0x3f818000u;
  std::memcpy(&f, &bits, 4);
  EXPECT_EQ(f32_to_bf16(f), 0x3f82);
  EXPECT_FLOAT_EQ(bf16_to_f32(0x4049), 3.140625f);
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(std::numeric_limits<float>::quiet_NaN()))));
}

TEST(DType, SafetensorsNames) {
  EXPECT_EQ(dtype_from_safetensors("BF16"), DType::kBF16);
  EXPECT_EQ(dtype_from_safetensors("F8_E4M3"), DType::kF8E4M3);
  EXPECT_FALSE(dtype_from_safetensors("F4").has_value());
  EXPECT_EQ(dtype_to_safetensors(DType::kI32), "I32");
  EXPECT_EQ(dtype_size(DType::kF16), 2u);
}

}  // namespace
}  // namespace crosspoint
