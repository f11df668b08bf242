// Internal to the W4A16 small-batch kernels (w4a16_gemv.cu, w4a16_gemv_ring.cu): the
// streaming load of packed weight words and the multiply of one 64-deep packed chunk of an
// n16 block against up to 16 tokens (weights as the mma A operand, activations as B). Layout:
// w4a16_gemm.h; design: w4a16_gemv.h. Not a public API.
#pragma once

#include <cuda_fp16.h>

#include <cstdint>

#include "common/status.h"
#include "kernels/cuda/w4a16_fragments.cuh"
#include "kernels/cuda/w4a16_gemv.h"

namespace crosspoint::cuda::w4a16_internal {

constexpr int kGemvChunkK = 64;  // input rows per packed chunk: 4 mma k-steps, 512 B per n16 block

// 16-byte streaming load of data read once per step: read-only path, not kept in L1 (the
// activations live there), with a 256-byte L2 prefetch (a warp reads 512 contiguous bytes).
__device__ __forceinline__ uint4 load_streaming_16(const uint4* ptr) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(ptr));
  return v;
}

// acc[tile][4] += scale * (W tile^T · x) over one 64-deep chunk of packed words `weight`.
// x_pairs[tile] holds this chunk's B fragments of token tile `tile` (tokens 8 tile .. +7;
// [2j] = x[token][j*16 + 2t, +1], [2j+1] = the pair 8 further); each pair is reloaded from
// `next_x[tile]` (a later chunk's) as soon as its MMA has read it, so the activations run
// ahead in 8 registers a chunk and tile. The MMAs sum the unscaled (q - 8) products in fp32
// (exact: |q - 8| <= 8 times an fp16 value); the group scale half2 (s[n = c], s[n = c + 8])
// is applied once per chunk in fp32. kTiles = 2 (9 <= m <= 16) dequantises each weight word
// once and feeds it to one MMA per token tile.
template <int kTiles>
__device__ __forceinline__ void multiply_chunk(uint4 weight, uint32_t scale, uint32_t (*x_pairs)[8],
                                               const uint32_t* const* next_x, float (*acc)[4]) {
  float chunk_sum[kTiles][4] = {};
  const uint32_t words[4] = {weight.x, weight.y, weight.z, weight.w};
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    half2 frag[4];
    dequant_word(words[j], frag);
    const uint32_t* f = reinterpret_cast<const uint32_t*>(frag);
    // A fragment (rows = n, cols = k): a0 (n=c, k0..), a1 (n=c+8, k0..), a2 (n=c, k0+8..),
    // a3 (n=c+8, k0+8..).
    const uint32_t a[4] = {f[0], f[2], f[1], f[3]};
#pragma unroll
    for (int tile = 0; tile < kTiles; ++tile) {
      mma_m16n8k16(chunk_sum[tile], a, x_pairs[tile][2 * j], x_pairs[tile][2 * j + 1]);
      x_pairs[tile][2 * j] = __ldg(next_x[tile] + j * 8);
      x_pairs[tile][2 * j + 1] = __ldg(next_x[tile] + j * 8 + 4);
    }
  }
  const float2 s = __half22float2(*reinterpret_cast<const half2*>(&scale));
#pragma unroll
  for (int tile = 0; tile < kTiles; ++tile) {
    acc[tile][0] = fmaf(s.x, chunk_sum[tile][0], acc[tile][0]);  // C rows n = c: tokens 2t, 2t+1
    acc[tile][1] = fmaf(s.x, chunk_sum[tile][1], acc[tile][1]);
    acc[tile][2] = fmaf(s.y, chunk_sum[tile][2], acc[tile][2]);  // C rows n = c + 8
    acc[tile][3] = fmaf(s.y, chunk_sum[tile][3], acc[tile][3]);
  }
}

// The ring kernels' launch (w4a16_gemv_ring.cu); arguments already checked by
// w4a16_gemv_with_options.
Status launch_gemv_ring(const W4A16GemvOptions& options, const uint16_t* x, int64_t x_stride,
                        const uint32_t* packed_weight, const uint32_t* packed_scales, uint16_t* y, int64_t y_stride,
                        int m, int n, int k, int group_size, cudaStream_t stream);

}  // namespace crosspoint::cuda::w4a16_internal
