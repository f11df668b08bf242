// Internal to the two tensor-core attention kernels (paged_attention_decode_mma.cu,
// paged_attention_prefill.cu): their one online-softmax step (the MMAs are element16.cuh's).
// Not a public API.
#pragma once

#include <cstdint>

#include "kernels/cuda/element16.cuh"

namespace crosspoint::cuda::attention_internal {

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
