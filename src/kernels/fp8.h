// FP8 (float8_e4m3fn) W8A8 linear, as compressed-tensors "FP8-dynamic" checkpoints run it:
// weights e4m3 with one fp32 scale per output channel, activations quantised per token at
// run time. The activation dtype flow is the GPU's (and vLLM's, which quantises activations
// held in the model's 16-bit dtype): each activation is first rounded to fp16, saturated to
// +-65504 (kernels/f16_rounding.h), since the GPU holds it in fp16; e4m3's 3-bit mantissa would otherwise turn the
// CPU's extra f32 bits into a different code for about one element in a hundred.
//   h[t, k]      = fp16(clamp(x[t, k], -65504, 65504))                        round to nearest even
//   act_scale[t] = max(max_k |h[t, k]| / 448, 1 / (448 * 512))                 fp32
//   xq[t, k]     = e4m3(h[t, k] / act_scale[t])   IEEE fp32 division, round to nearest
//                                                  even, saturated to +-448
//   y[t, n]      = act_scale[t] * weight_scale[n] * sum_k xq[t, k] * wq[n, k]  (+ bias[n])
// The sum runs in fp32 (every e4m3 x e4m3 product is exact in fp32).
// Checkpoints with static activation scales (compressed-tensors input_activations
// {strategy "tensor", dynamic false}: one calibrated `input_scale` per layer) use that scale
// for every token in place of act_scale[t]; the rest is the same.
//
// E4M3FN: sign, 4 exponent bits (bias 7), 3 mantissa bits; no infinities; S.1111.111 is NaN;
// largest finite 448 (0x7E), smallest normal 2^-6, smallest subnormal 2^-9.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "common/status.h"
#include "kernels/f16_rounding.h"

namespace crosspoint {

inline constexpr float kE4M3Max = 448.0f;
// vLLM's floor on the dynamic per-token scale, so an all-zero row does not divide by zero.
inline constexpr float kFp8MinActScale = 1.0f / (448.0f * 512.0f);

// f32 -> e4m3 byte, round to nearest even, saturating: |x| >= 448 (and +-inf) -> +-448,
// NaN -> 0x7F with the input's sign. This is the "saturate then cast" convention
// (compressed-tensors clamps to +-448 before torch's cast).
inline uint8_t f32_to_e4m3(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  const uint8_t sign = static_cast<uint8_t>((bits >> 24) & 0x80u);
  const uint32_t abs_bits = bits & 0x7fffffffu;
  if (abs_bits > 0x7f800000u) return sign | 0x7Fu;   // NaN
  if (abs_bits >= 0x43e00000u) return sign | 0x7Eu;  // >= 448 or inf: saturate
  if (abs_bits < 0x3c800000u) {                      // < 2^-6: subnormal range, step 2^-9
    float abs_f;
    std::memcpy(&abs_f, &abs_bits, sizeof abs_f);
    // abs_f * 512 is exact; nearbyint rounds half to even in the default rounding mode.
    // A result of 8 is the smallest normal, whose code is also 8.
    return sign | static_cast<uint8_t>(std::nearbyint(abs_f * 512.0f));
  }
  // Normal: keep 3 of 23 mantissa bits, rounding to nearest even; a carry moves into the
  // exponent on its own. Rebias the exponent from 127 to 7 (subtract 120 << 3).
  const uint32_t rounded = (abs_bits + 0x7ffffu + ((abs_bits >> 20) & 1u)) >> 20;
  uint32_t code = rounded - (120u << 3);
  if (code > 0x7Eu) code = 0x7Eu;  // 448 < |x| < 464 cannot reach here, but be safe
  return sign | static_cast<uint8_t>(code);
}

// e4m3 byte -> f32 (exact). 0x7F / 0xFF decode to NaN.
inline float e4m3_to_f32(uint8_t q) {
  const uint32_t exponent = (q >> 3) & 0xFu;
  const uint32_t mantissa = q & 0x7u;
  float magnitude;
  if ((q & 0x7Fu) == 0x7Fu) {
    magnitude = std::nanf("");
  } else if (exponent == 0) {
    magnitude = std::ldexp(static_cast<float>(mantissa), -9);
  } else {
    magnitude = std::ldexp(1.0f + static_cast<float>(mantissa) / 8.0f, static_cast<int>(exponent) - 7);
  }
  return (q & 0x80u) ? -magnitude : magnitude;
}

// e4m3_to_f32 of all 256 codes, for kernels that decode many elements (a lookup is cheaper
// than the bit arithmetic and ldexp per element).
const float* e4m3_to_f32_table();

struct Fp8QuantizeArgs {
  const float* x = nullptr;  // [num_rows, num_cols] f32, rows x_row_stride apart (0: num_cols)
  int64_t x_row_stride = 0;
  uint8_t* xq = nullptr;   // [num_rows, num_cols] e4m3 bytes, dense
  float* scale = nullptr;  // [num_rows] f32 per-token scale
  int64_t num_rows = 0;
  int64_t num_cols = 0;
  float static_scale = 0.0f;  // > 0: every row's scale (a static activation scale), no amax
};

// Per-token dynamic quantisation (formula at the top, fp16 rounding included). Reference and
// fast (multithreaded over rows, AVX2) versions; both are bit-exact with each other.
Status fp8_quantize_per_token_ref(const Fp8QuantizeArgs& args);
Status fp8_quantize_per_token(const Fp8QuantizeArgs& args);

struct Fp8LinearArgs {
  const float* x = nullptr;             // [num_rows, in_features] f32, rows x_row_stride apart
  int64_t x_row_stride = 0;             // elements; 0 means in_features
  const uint8_t* weight = nullptr;      // [out_features, in_features] e4m3 (HF orientation)
  const float* weight_scale = nullptr;  // [out_features] f32 per output channel
  const float* bias = nullptr;          // [out_features] f32, or null
  float* y = nullptr;                   // [num_rows, out_features] f32
  int64_t num_rows = 0;
  int64_t in_features = 0;
  int64_t out_features = 0;
  float input_scale = 0.0f;  // > 0: static per-tensor activation scale; 0: per token
};

// Plain reference: quantises x per token with the reference above, then one scalar dot
// product per output with double accumulation.
Status fp8_linear_ref(const Fp8LinearArgs& args);
// Fast version: per-token quantisation, then a GEMV/GEMM over the e4m3 weight bytes
// (AVX2: e4m3 -> f16 bit shuffle -> f32) split over output features on the global pool.
Status fp8_linear(const Fp8LinearArgs& args);

Status validate_fp8_quantize_args(const Fp8QuantizeArgs& args);
Status validate_fp8_linear_args(const Fp8LinearArgs& args);

}  // namespace crosspoint
