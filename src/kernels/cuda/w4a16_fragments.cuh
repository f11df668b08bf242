// Internal to w4a16_gemm.cu and w4a16_gemv.cu: the int4 -> fp16 decode of one packed word
// (layout in w4a16_gemm.h) and the mma.m16n8k16 both kernels issue. Not a public API.
#pragma once

#include <cuda_fp16.h>

#include <cstdint>

namespace crosspoint::cuda::w4a16_internal {

// (a & b) | c in one lop3 instruction.
__device__ __forceinline__ uint32_t lop3_and_or(uint32_t a, uint32_t b, uint32_t c) {
  uint32_t r;
  asm("lop3.b32 %0, %1, %2, %3, 0xEA;\n" : "=r"(r) : "r"(a), "r"(b), "r"(c));
  return r;
}

// One packed word -> four half2 registers holding (q - 8), scale not applied. With
// c = lane/4 and k0 = (lane%4)*2 of the word's 16x16 tile (rows k, columns n):
//   out[0] = (k0, k0+1) of column c        out[1] = (k0+8, k0+9) of column c
//   out[2] = (k0, k0+1) of column c+8      out[3] = (k0+8, k0+9) of column c+8
// (lower k in the low half). The nibbles are or-ed under the exponent of 1024 (the
// "magic number" trick): 1024 + q is exact in fp16, and subtracting 1032 leaves q - 8.
__device__ __forceinline__ void dequant_word(uint32_t word, half2 out[4]) {
  constexpr uint32_t kLo = 0x000F000F, kHi = 0x00F000F0, kMagic = 0x64006400;
  const uint32_t lo0 = lop3_and_or(word, kLo, kMagic);
  const uint32_t hi0 = lop3_and_or(word, kHi, kMagic);
  const uint32_t shifted = word >> 8;
  const uint32_t lo1 = lop3_and_or(shifted, kLo, kMagic);
  const uint32_t hi1 = lop3_and_or(shifted, kHi, kMagic);
  const uint32_t k1032 = 0x64086408;  // half2(1032, 1032): 1024 + zero point 8
  const uint32_t k1_16 = 0x2C002C00;  // half2(1/16, 1/16)
  const uint32_t kM72 = 0xD480D480;   // half2(-72, -72) = -(1024/16 + 8)
  const half2 magic_sub = *reinterpret_cast<const half2*>(&k1032);
  const half2 sixteenth = *reinterpret_cast<const half2*>(&k1_16);
  const half2 minus72 = *reinterpret_cast<const half2*>(&kM72);
  out[0] = __hsub2(*reinterpret_cast<const half2*>(&lo0), magic_sub);
  out[1] = __hfma2(*reinterpret_cast<const half2*>(&hi0), sixteenth, minus72);
  out[2] = __hsub2(*reinterpret_cast<const half2*>(&lo1), magic_sub);
  out[3] = __hfma2(*reinterpret_cast<const half2*>(&hi1), sixteenth, minus72);
}

// The same with per-column zero points (asymmetric GPTQ, AWQ): out[] hold (q - z) exactly.
// zero_pair is the packed zeros' half2 (1024 + z[c], 1024 + z[c + 8]) (w4a16_gemm.h): the low
// nibbles subtract it, the high ones (1024 + 16 q) / 16 - (64 + z) with 960 - (1024 + z) = -(64 + z).
// With z = 8 this is dequant_word's arithmetic exactly.
__device__ __forceinline__ void dequant_word_zero(uint32_t word, uint32_t zero_pair, half2 out[4]) {
  constexpr uint32_t kLo = 0x000F000F, kHi = 0x00F000F0, kMagic = 0x64006400;
  const uint32_t lo0 = lop3_and_or(word, kLo, kMagic);
  const uint32_t hi0 = lop3_and_or(word, kHi, kMagic);
  const uint32_t shifted = word >> 8;
  const uint32_t lo1 = lop3_and_or(shifted, kLo, kMagic);
  const uint32_t hi1 = lop3_and_or(shifted, kHi, kMagic);
  const uint32_t k1_16 = 0x2C002C00;  // half2(1/16, 1/16)
  const uint32_t k960 = 0x63806380;   // half2(960, 960)
  const half2 sixteenth = *reinterpret_cast<const half2*>(&k1_16);
  const half2 zeros = *reinterpret_cast<const half2*>(&zero_pair);
  const half2 hi_add = __hsub2(*reinterpret_cast<const half2*>(&k960), zeros);  // -(64 + z) per column
  out[0] = __hsub2(*reinterpret_cast<const half2*>(&lo0), __low2half2(zeros));
  out[1] = __hfma2(*reinterpret_cast<const half2*>(&hi0), sixteenth, __low2half2(hi_add));
  out[2] = __hsub2(*reinterpret_cast<const half2*>(&lo1), __high2half2(zeros));
  out[3] = __hfma2(*reinterpret_cast<const half2*>(&hi1), sixteenth, __high2half2(hi_add));
}

// acc[4] += A(16x16, row-major fragment a[4]) * B(16x8, col-major fragment b0, b1), fp32.
__device__ __forceinline__ void mma_m16n8k16(float acc[4], const uint32_t a[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

}  // namespace crosspoint::cuda::w4a16_internal
