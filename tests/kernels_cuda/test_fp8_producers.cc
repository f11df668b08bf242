// The kernels that produce a W8A8 linear's input and quantise it on the way out
// (add_rms_norm_quantize_fp8, silu_mul_quantize_fp8) against their two-launch reference:
// the plain op, then fp8_quantize_per_token on its fp16 output. Every byte must match (fp16
// rows, e4m3 codes and scales), on the fused register kernels and on the fallback widths, with
// strides wider than the rows so that nothing outside a row is touched.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "kernels/cuda/decoder_ops.h"
#include "kernels/cuda/fp8_quant.h"
#include "kernels_cuda/reference.h"

namespace crosspoint::cuda {
namespace {

using testing::DeviceBuffer;

std::vector<uint32_t> float_bits(const std::vector<float>& v) {
  std::vector<uint32_t> bits(v.size());
  std::memcpy(bits.data(), v.data(), v.size() * 4);
  return bits;
}

TEST(Fp8ProducerArgs, BadArgumentsAreStatusErrors) {
  uint16_t* p16 = reinterpret_cast<uint16_t*>(16);
  uint8_t* p8 = reinterpret_cast<uint8_t*>(16);
  float* pf = reinterpret_cast<float*>(16);
  EXPECT_EQ(add_rms_norm_quantize_fp8(pf, nullptr, 0, p16, 1e-6f, p16, 8, nullptr, 8, pf, 1, 8, nullptr).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(add_rms_norm_quantize_fp8(pf, nullptr, 0, p16, 1e-6f, p16, 8, p8, 4, pf, 1, 8, nullptr).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(add_rms_norm_quantize_fp8(pf, nullptr, 0, p16, 1e-6f, p16, 8, p8, 8, nullptr, 1, 8, nullptr).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(silu_mul_quantize_fp8(p16, 16, p16, 8, nullptr, 8, pf, 1, 8, nullptr).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(silu_mul_quantize_fp8(p16, 16, p16, 8, p8, 4, pf, 1, 8, nullptr).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(silu_mul_quantize_fp8(p16, 15, p16, 8, p8, 8, pf, 1, 8, nullptr).code(), StatusCode::kInvalidArgument);
}

TEST(AddRmsNormQuantizeFp8, SameBitsAsNormThenQuantise) {
  CROSSPOINT_SKIP_WITHOUT_GPU();
  std::mt19937 rng(301);
  std::uniform_real_distribution<float> unit(-3.f, 3.f);
  // 100, 3584 and 8192 take the fused register kernel; 102 (not a multiple of 4: the scalar
  // norm) and 12288 (too wide for registers) take the two launches.
  for (int d : {100, 102, 3584, 4096, 8192, 12288}) {
    for (int t_count : {1, 5, 19}) {
      for (bool with_delta : {true, false}) {
        const int64_t out_stride = d + 8, q_stride = d + 16, delta_stride = d + 4;
        std::vector<float> residual(static_cast<size_t>(t_count) * d);
        for (auto& v : residual) v = unit(rng);
        const auto delta = testing::random_f16(rng, static_cast<size_t>(t_count) * delta_stride, -1.f, 1.f);
        const auto weight = testing::random_f16(rng, d, 0.25f, 4.f);
        DeviceBuffer<float> res_a(residual), res_b(residual), scale_a(t_count), scale_b(t_count);
        DeviceBuffer<uint16_t> delta_dev(delta), weight_dev(weight);
        DeviceBuffer<uint16_t> out_a(static_cast<size_t>(t_count) * out_stride);
        DeviceBuffer<uint16_t> out_b(static_cast<size_t>(t_count) * out_stride);
        DeviceBuffer<uint8_t> q_a(static_cast<size_t>(t_count) * q_stride),
            q_b(static_cast<size_t>(t_count) * q_stride);
        for (auto* b : {&out_a, &out_b}) b->poison();
        for (auto* b : {&q_a, &q_b}) b->poison(0x5A);
        const uint16_t* del = with_delta ? delta_dev.get() : nullptr;
        ASSERT_TRUE(add_rms_norm_quantize_fp8(res_a.get(), del, delta_stride, weight_dev.get(), 1e-6f, out_a.get(),
                                              out_stride, q_a.get(), q_stride, scale_a.get(), t_count, d, nullptr)
                        .is_ok());
        ASSERT_TRUE(add_rms_norm(res_b.get(), del, delta_stride, weight_dev.get(), 1e-6f, out_b.get(), out_stride,
                                 t_count, d, nullptr)
                        .is_ok());
        ASSERT_TRUE(
            fp8_quantize_per_token(out_b.get(), out_stride, q_b.get(), q_stride, scale_b.get(), t_count, d, nullptr)
                .is_ok());
        const std::string where = "d=" + std::to_string(d) + " t=" + std::to_string(t_count);
        ASSERT_EQ(float_bits(res_a.download()), float_bits(res_b.download())) << where;
        ASSERT_EQ(out_a.download(), out_b.download()) << where;
        ASSERT_EQ(q_a.download(), q_b.download()) << where;  // the padding past each row stays 0x5A in both
        ASSERT_EQ(float_bits(scale_a.download()), float_bits(scale_b.download())) << where;
      }
    }
  }
}

TEST(SiluMulQuantizeFp8, SameBitsAsSiluMulThenQuantise) {
  CROSSPOINT_SKIP_WITHOUT_GPU();
  std::mt19937 rng(302);
  // 18944 (Qwen2.5-7B) and 20480 fill the register kernel; 7 and 24576 take the two launches.
  for (int inter : {7, 8, 1000, 18944, 20480, 24576}) {
    for (int t_count : {1, 4, 17}) {
      const int64_t in_stride = 2 * inter + (inter % 8 == 0 ? 8 : 1);
      const int64_t out_stride = inter + (inter % 8 == 0 ? 16 : 3), q_stride = inter + (inter % 8 == 0 ? 8 : 5);
      // Large values: some rows saturate e4m3's range before scaling, which the scale must absorb.
      const auto gate_up = testing::random_f16(rng, static_cast<size_t>(t_count) * in_stride, -30.f, 30.f);
      DeviceBuffer<uint16_t> in(gate_up), out_a(static_cast<size_t>(t_count) * out_stride),
          out_b(static_cast<size_t>(t_count) * out_stride);
      DeviceBuffer<uint8_t> q_a(static_cast<size_t>(t_count) * q_stride), q_b(static_cast<size_t>(t_count) * q_stride);
      DeviceBuffer<float> scale_a(t_count), scale_b(t_count);
      for (auto* b : {&out_a, &out_b}) b->poison();
      for (auto* b : {&q_a, &q_b}) b->poison(0x5A);
      ASSERT_TRUE(silu_mul_quantize_fp8(in.get(), in_stride, out_a.get(), out_stride, q_a.get(), q_stride,
                                        scale_a.get(), t_count, inter, nullptr)
                      .is_ok());
      ASSERT_TRUE(silu_mul(in.get(), in_stride, out_b.get(), out_stride, t_count, inter, nullptr).is_ok());
      ASSERT_TRUE(
          fp8_quantize_per_token(out_b.get(), out_stride, q_b.get(), q_stride, scale_b.get(), t_count, inter, nullptr)
              .is_ok());
      const std::string where = "I=" + std::to_string(inter) + " t=" + std::to_string(t_count);
      ASSERT_EQ(out_a.download(), out_b.download()) << where;
      ASSERT_EQ(q_a.download(), q_b.download()) << where;
      ASSERT_EQ(float_bits(scale_a.download()), float_bits(scale_b.download())) << where;
    }
  }
}

}  // namespace
}  // namespace crosspoint::cuda
