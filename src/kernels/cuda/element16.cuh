// The two 16-bit activation types of the GPU path, as kernel template arguments: fp16
// (Element16F16) and bf16 (Element16BF16, for checkpoints whose activations need fp32's range).
// Both travel as uint16_t bits; a kernel written over `class E` converts through E only. Not a
// public API.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "common/dtype.h"

namespace crosspoint::cuda {

struct Element16F16 {
  static constexpr DType kDType = DType::kF16;
  __device__ __forceinline__ static float to_float(uint16_t bits) { return __half2float(__ushort_as_half(bits)); }
  __device__ __forceinline__ static uint16_t from_float(float v) { return __half_as_ushort(__float2half_rn(v)); }
  // Two values packed low-first (the lower column in the low 16 bits).
  __device__ __forceinline__ static float2 to_float2(uint32_t bits) {
    return __half22float2(*reinterpret_cast<const __half2*>(&bits));
  }
  __device__ __forceinline__ static uint32_t pack2(float lo, float hi) {
    const __half2 h = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&h);
  }
  // d += a * b for one m16n8k16 tile, fp32 accumulate; a: 4 regs, b: 2 regs.
  __device__ __forceinline__ static void mma_16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
};

struct Element16BF16 {
  static constexpr DType kDType = DType::kBF16;
  __device__ __forceinline__ static float to_float(uint16_t bits) { return __uint_as_float(uint32_t{bits} << 16); }
  __device__ __forceinline__ static uint16_t from_float(float v) {
    return __bfloat16_as_ushort(__float2bfloat16_rn(v));
  }
  __device__ __forceinline__ static float2 to_float2(uint32_t bits) {
    return make_float2(__uint_as_float(bits << 16), __uint_as_float(bits & 0xffff0000u));
  }
  __device__ __forceinline__ static uint32_t pack2(float lo, float hi) {
    const __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&h);
  }
  __device__ __forceinline__ static void mma_16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
};

// Whether a launcher's activation dtype is one of the two (the launchers refuse others).
inline bool is_element16(DType dtype) { return dtype == DType::kF16 || dtype == DType::kBF16; }

// f(Element16BF16{}) for bf16, else f(Element16F16{}): a launcher's one switch on the dtype.
template <class F>
decltype(auto) with_element16(DType dtype, F&& f) {
  if (dtype == DType::kBF16) return f(Element16BF16{});
  return f(Element16F16{});
}

}  // namespace crosspoint::cuda
