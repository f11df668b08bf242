// Rounding f32 activations to the fp16 or bf16 values the GPU holds. fp16: round to nearest even,
// saturated to +-65504 (an f32 value beyond fp16's range stays finite), NaN kept; the W8A8-FP8
// quantiser and the fp8 KV cache quantise these values (kernels/fp8.h). bf16: round to nearest
// even (f32's range, so only values within half an ulp of FLT_MAX round to infinity, as CUDA's
// __float2bfloat16_rn does), NaN kept. A model loaded with ModelLoadOptions::activation_dtype
// float16 or bfloat16 rounds every activation the GPU stores to that type.
#pragma once

#include <cstdint>

#include "common/dtype.h"

namespace crosspoint {

inline constexpr float kF16Max = 65504.0f;

inline float round_to_f16_saturated(float x) {
  if (x > kF16Max) x = kF16Max;
  if (x < -kF16Max) x = -kF16Max;
  return f16_to_f32(f32_to_f16(x));
}

// out[i] = round_to_f16_saturated(x[i]) for n values (out may be x). The reference is the scalar
// loop; the fast version converts 8 at a time through F16C, bit-exact with it.
void round_to_f16_ref(const float* x, float* out, int64_t n);
void round_to_f16(const float* x, float* out, int64_t n);
// out[i] = bf16_to_f32(f32_to_bf16(x[i])) for n values (out may be x).
void round_to_bf16(const float* x, float* out, int64_t n);

}  // namespace crosspoint
