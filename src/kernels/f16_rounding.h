// Rounding f32 activations to the fp16 values the GPU holds: round to nearest even, saturated to
// +-65504 (an f32 value beyond fp16's range stays finite), NaN kept. The W8A8-FP8 quantiser and
// the fp8 KV cache quantise these values (kernels/fp8.h), and a model loaded with
// ModelLoadOptions::fp16_activations rounds every activation the GPU stores in fp16.
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

}  // namespace crosspoint
