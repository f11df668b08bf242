// Element types and scalar conversions. Tensors keep their stored dtype; kernels convert
// to fp32 on the fly and accumulate in fp32.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>

namespace crosspoint {

enum class DType : uint8_t {
  kF32,
  kF16,
  kBF16,
  kF8E4M3,  // float8_e4m3fn: bias 7, max 448, no infinities
  kI8,
  kU8,
  kI32,
  kI64,
  kF64,
  kBool,
};

// Bytes per element.
size_t dtype_size(DType dtype);
// Lower-case name for logs: "f32", "f16", "bf16", "f8_e4m3", ...
std::string_view dtype_name(DType dtype);
// safetensors header spelling ("F32", "F16", "BF16", "F8_E4M3", "I8", "U8", "I32", "I64",
// "F64", "BOOL") -> DType; nullopt for a dtype crosspoint does not read.
std::optional<DType> dtype_from_safetensors(std::string_view name);
std::string_view dtype_to_safetensors(DType dtype);

// IEEE binary16 <-> binary32, round to nearest even; handles subnormals, inf and NaN.
inline float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu;
  uint32_t mantissa = h & 0x3ffu;
  uint32_t bits;
  if (exponent == 0x1f) {
    bits = sign | 0x7f800000u | (mantissa << 13);
  } else if (exponent != 0) {
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    bits = sign;
  } else {  // subnormal: normalise
    uint32_t e = 113;
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      --e;
    }
    bits = sign | (e << 23) | ((mantissa & 0x3ffu) << 13);
  }
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

inline uint16_t f32_to_f16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, sizeof x);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) {  // inf or NaN
    return sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u);
  }
  if (abs >= 0x477ff000u) return sign | 0x7c00u;  // rounds to >= 65520: overflow to inf
  if (abs < 0x38800000u) {                        // result is subnormal or zero
    if (abs < 0x33000000u) return sign;           // < 2^-25 rounds to zero
    const uint32_t e = abs >> 23;
    const uint32_t m = (abs & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126 - e;  // 14..24
    uint32_t half = m >> shift;
    const uint32_t rem = m & ((1u << shift) - 1);
    const uint32_t mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1u))) ++half;
    return sign | static_cast<uint16_t>(half);
  }
  uint32_t half = ((abs >> 13) - (112u << 10));
  const uint32_t rem = abs & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1u))) ++half;
  return sign | static_cast<uint16_t>(half);
}

inline float bf16_to_f32(uint16_t b) {
  const uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

inline uint16_t f32_to_bf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, sizeof x);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet NaN
  const uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>((x + rounding) >> 16);
}

}  // namespace crosspoint
