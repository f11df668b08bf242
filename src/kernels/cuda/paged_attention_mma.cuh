// Internal to the two tensor-core attention kernels (paged_attention_decode_mma.cu,
// paged_attention_prefill.cu): the fp16 mma.m16n8k16 they share and their one online-softmax
// step. Not a public API.
#pragma once

#include <cuda_fp16.h>

#include <cstdint>

namespace crosspoint::cuda::attention_internal {

// d += a * b for one m16n8k16 tile (fp16 in, fp32 accumulate); a: 4 regs, b: 2 regs.
__device__ __forceinline__ void mma_16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ uint32_t pack_half2(float lo, float hi) {
  const __half2 h = __floats2half2_rn(lo, hi);  // lo in the low 16 bits: the lower column
  return *reinterpret_cast<const uint32_t*>(&h);
}

// The factors the running output rows a and b are rescaled by after a softmax step.
struct SoftmaxRescale {
  float a, b;
};

// One online-softmax step (log2 domain) over the S accumulators of kTiles n8 position tiles,
// already scaled and masked (-inf where not visible): C fragment elements 0, 1 are row a
// (the lane's group), 2, 3 row b (group + 8); the 4 lanes of a quad hold one row's columns.
// Updates the rows' running max m and sum l, replaces S by its (unnormalised) probabilities
// and returns how much the running output must shrink. Every row must see a finite score in
// its first step (m starts at -inf, and exp2f(-inf - finite) = 0 then).
template <int kTiles>
__device__ __forceinline__ SoftmaxRescale online_softmax_step(float (&sc)[kTiles][4], float& m_a, float& m_b,
                                                              float& l_a, float& l_b) {
  float max_a = -INFINITY, max_b = -INFINITY;
#pragma unroll
  for (int nt = 0; nt < kTiles; ++nt) {
    max_a = fmaxf(max_a, fmaxf(sc[nt][0], sc[nt][1]));
    max_b = fmaxf(max_b, fmaxf(sc[nt][2], sc[nt][3]));
  }
#pragma unroll
  for (int offset = 1; offset < 4; offset *= 2) {  // the 4 lanes of a row
    max_a = fmaxf(max_a, __shfl_xor_sync(0xffffffffu, max_a, offset));
    max_b = fmaxf(max_b, __shfl_xor_sync(0xffffffffu, max_b, offset));
  }
  const float new_m_a = fmaxf(m_a, max_a), new_m_b = fmaxf(m_b, max_b);
  const SoftmaxRescale rescale{exp2f(m_a - new_m_a), exp2f(m_b - new_m_b)};
  m_a = new_m_a;
  m_b = new_m_b;
  float sum_a = 0.f, sum_b = 0.f;
#pragma unroll
  for (int nt = 0; nt < kTiles; ++nt) {
    sc[nt][0] = exp2f(sc[nt][0] - m_a);
    sc[nt][1] = exp2f(sc[nt][1] - m_a);
    sc[nt][2] = exp2f(sc[nt][2] - m_b);
    sc[nt][3] = exp2f(sc[nt][3] - m_b);
    sum_a += sc[nt][0] + sc[nt][1];
    sum_b += sc[nt][2] + sc[nt][3];
  }
  l_a = l_a * rescale.a + sum_a;
  l_b = l_b * rescale.b + sum_b;
  return rescale;
}

}  // namespace crosspoint::cuda::attention_internal
