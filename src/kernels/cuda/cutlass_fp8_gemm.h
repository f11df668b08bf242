// W8A8-FP8 GEMM on Hopper through CUTLASS's warp-specialised TMA kernel, for the rows where the
// decode step is neither a GEMV nor a large GEMM (a few to a few hundred tokens):
//   y[M, N] fp16 = x_scale[m] * w_scale[n] * (xq[M, K] · wq[N, K]^T)          (e4m3, fp32 sums)
// Operands swapped: CUTLASS computes D[N, M] = W[N, K] · X[M, K]^T, so 64 output channels are
// the tile's wide side and 16 to 128 tokens its narrow side, and a token tile never pads to 64
// or 128 rows. A producer warp streams W and X tiles through a TMA + mbarrier ring as deep as
// shared memory allows; one consumer warpgroup runs e4m3 wgmmas and moves its sums into fp32
// registers once per 256-deep k-block (CUTLASS's FP8 mainloop, not the fast-accumulate one);
// the epilogue multiplies by both scales and stores fp16 through TMA. No K split: every sum is
// one CTA's, in one order, whatever the batch.
//
// Needs compute capability 9.0 and a binary built for sm_90a (cutlass_fp8_available()); K and
// the xq / w strides multiples of 16 bytes, N and y's stride multiples of 8 elements, xq, wq
// and y 16-byte aligned, as TMA wants (refused with a Status).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "common/status.h"

namespace crosspoint::cuda {

// The instantiated kernels: output channels x tokens of one CTA's tile and how the tiles are
// scheduled (cutlass_fp8_kernels.h).
enum class CutlassFp8Tile {
  k64x16,
  k64x32,
  k64x64,
  k64x128,
  kPingpong64x16,
  kPingpong64x32,
  kPingpong64x64,
  kPingpong64x128,
  kStreamK128x16,
  kStreamK128x32,
  kStreamK128x64,
  kStreamK128x128,
  kStreamK128x256,
};
inline constexpr CutlassFp8Tile kAllCutlassFp8Tiles[] = {
    CutlassFp8Tile::k64x16,         CutlassFp8Tile::k64x32,          CutlassFp8Tile::k64x64,
    CutlassFp8Tile::k64x128,        CutlassFp8Tile::kPingpong64x16,  CutlassFp8Tile::kPingpong64x32,
    CutlassFp8Tile::kPingpong64x64, CutlassFp8Tile::kPingpong64x128, CutlassFp8Tile::kStreamK128x16,
    CutlassFp8Tile::kStreamK128x32, CutlassFp8Tile::kStreamK128x64,  CutlassFp8Tile::kStreamK128x128,
    CutlassFp8Tile::kStreamK128x256};
const char* cutlass_fp8_tile_name(CutlassFp8Tile tile);
// Whether this binary instantiates the kernel: the dispatch's always (with the sm_90a kernels),
// the others only in a build with -DCROSSPOINT_CUTLASS_CANDIDATES=ON.
bool cutlass_fp8_tile_built(CutlassFp8Tile tile);
// Tokens of the tile's narrow side.
int cutlass_fp8_tile_tokens(CutlassFp8Tile tile);
// 16, 32, 64 rows: the smallest tile that holds them; more: 128-token tiles, several along M.
CutlassFp8Tile cutlass_fp8_tile_for(int m);

// Whether this device and binary run the kernels (compute capability 9.0, sm_90a image).
bool cutlass_fp8_available();

// Whether cutlass_fp8_gemm takes these sizes and strides: its refusals and CUTLASS's own
// can_implement, without a GPU (host; unsupported in a build without the sm_90a kernels).
Status cutlass_fp8_gemm_check(int m, int n, int k, int64_t xq_stride, int64_t w_stride, int64_t y_stride);

//   xq [M, K] e4m3 (row stride xq_stride bytes), x_scale [M] fp32 (per token),
//   wq [N, K] e4m3 (row stride w_stride bytes), w_scale [N] fp32 (per channel),
//   y [M, N] fp16 (row stride y_stride elements).
Status cutlass_fp8_gemm(const uint8_t* xq, int64_t xq_stride, const float* x_scale, const uint8_t* wq, int64_t w_stride,
                        const float* w_scale, uint16_t* y, int64_t y_stride, int m, int n, int k, cudaStream_t stream);

// The same on a given kernel (tests and benchmarks compare them). The stream-K kernels need a
// device workspace of cutlass_fp8_workspace_bytes(tile, m, n, k) bytes (the others none);
// splits > 1 asks stream-K for that fixed K split instead of its own plan.
Result<size_t> cutlass_fp8_workspace_bytes(CutlassFp8Tile tile, int m, int n, int k, int splits = 0);
Status cutlass_fp8_gemm_with(CutlassFp8Tile tile, const uint8_t* xq, int64_t xq_stride, const float* x_scale,
                             const uint8_t* wq, int64_t w_stride, const float* w_scale, uint16_t* y, int64_t y_stride,
                             int m, int n, int k, void* workspace, size_t workspace_bytes, cudaStream_t stream,
                             int splits = 0);

}  // namespace crosspoint::cuda
