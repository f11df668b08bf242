// W8A8-FP8 GEMM on Hopper through CUTLASS's warp-specialised TMA kernel, for the rows where the
// decode step is neither a GEMV nor a large GEMM (a few to a few hundred tokens), and the same
// kernels for W8A8-INT8 (cutlass_int8_gemm at the end):
//   y[M, N] fp16 = x_scale[m] * w_scale[n] * (xq[M, K] · wq[N, K]^T)          (e4m3, fp32 sums)
// Operands swapped: CUTLASS computes D[N, M] = W[N, K] · X[M, K]^T, so 64 output channels are
// the tile's wide side and 16 to 128 tokens its narrow side, and a token tile never pads to 64
// or 128 rows. A producer warp streams W and X tiles through a TMA + mbarrier ring as deep as
// shared memory allows; a consumer warpgroup per tile (two taking turns on ping-pong CTAs)
// runs e4m3 wgmmas and moves its sums into fp32 registers once per 256-deep k-block (CUTLASS's
// FP8 mainloop, not the fast-accumulate one); the epilogue multiplies by both scales and
// stores fp16 through TMA. No K split: every sum is one CTA's, in one order.
//
// Needs compute capability 9.0 and a binary built for sm_90a (cutlass_fp8_available()); K and
// the xq / w strides multiples of 16 bytes, N and y's stride multiples of 8 elements, xq, wq
// and y 16-byte aligned, as TMA wants (refused with a Status).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <optional>

#include "common/status.h"

namespace crosspoint::cuda {

// The instantiated kernels: output channels x tokens of one CTA's tile, and whether persistent
// ping-pong or cooperative CTAs run them (cutlass_fp8_kernels.h).
enum class CutlassFp8Tile {
  k64x16,
  k64x32,
  k64x64,
  k64x128,
  kPingpong64x16,
  kPingpong64x32,
  kPingpong64x64,
  // int8 only: persistent CTAs whose two consumer warpgroups share each 128-channel tile
  kCooperative128x128,
  kCooperative128x256,
};
inline constexpr CutlassFp8Tile kAllCutlassFp8Tiles[] = {CutlassFp8Tile::k64x16,         CutlassFp8Tile::k64x32,
                                                         CutlassFp8Tile::k64x64,         CutlassFp8Tile::k64x128,
                                                         CutlassFp8Tile::kPingpong64x16, CutlassFp8Tile::kPingpong64x32,
                                                         CutlassFp8Tile::kPingpong64x64};
inline constexpr CutlassFp8Tile kAllCutlassInt8Tiles[] = {CutlassFp8Tile::k64x16,
                                                          CutlassFp8Tile::k64x32,
                                                          CutlassFp8Tile::k64x64,
                                                          CutlassFp8Tile::k64x128,
                                                          CutlassFp8Tile::kPingpong64x16,
                                                          CutlassFp8Tile::kPingpong64x32,
                                                          CutlassFp8Tile::kPingpong64x64,
                                                          CutlassFp8Tile::kCooperative128x128,
                                                          CutlassFp8Tile::kCooperative128x256};
const char* cutlass_fp8_tile_name(CutlassFp8Tile tile);
// Tokens of the tile's narrow side.
int cutlass_fp8_tile_tokens(CutlassFp8Tile tile);

// Rows up to which a CUTLASS kernel may take a linear (above, cuBLASLt always won).
inline constexpr int kFp8CutlassMaxRows = 256;
// The kernel for m rows of an n-channel linear on a GPU of num_sms SMs, or none where cuBLASLt
// is faster (measured per Qwen2.5-7B linear, docs/cuda.md). Tiles are counted against the SMs:
//   m <= 64     the smallest 16/32/64-token tile that holds them, ping-pong when there are more
//               64-channel tiles than SMs (a CTA takes several, its epilogue hides under the next)
//   m <= 128    64-token tiles on ping-pong CTAs, unless they spill just past one wave
//               (num_sms < tiles <= 2 num_sms) while 128-token tiles fit in it: then 64x128
//   m <= 256    64x128 while its tiles fit in one wave; else none
//   more        none
std::optional<CutlassFp8Tile> cutlass_fp8_tile_for(int m, int n, int num_sms);
// Rows from which INT8 takes the cooperative 128x256 tile (it beat 128x128 on three of the four
// 7B linears at 1,024 rows and on all at 2,048, H100).
inline constexpr int kInt8WideTileMinRows = 1024;
// The kernel for W8A8-INT8, CUTLASS at every row count (int8's cuBLASLt kernels are slower than
// FP8's): FP8's up to 128 rows and wherever 64x128's tiles fit one wave to 256; the cooperative
// 128x128 tile at the other 129 .. kInt8WideTileMinRows - 1 rows; the cooperative 128x256 from
// kInt8WideTileMinRows.
std::optional<CutlassFp8Tile> cutlass_int8_tile_for(int m, int n, int num_sms);

// Whether this device and binary run the kernels (compute capability 9.0, sm_90a image).
bool cutlass_fp8_available();

// Whether the kernel takes these sizes and strides: the launcher's refusals and CUTLASS's own
// can_implement, without a GPU (host; unsupported in a build without the sm_90a kernels).
Status cutlass_fp8_gemm_check(CutlassFp8Tile tile, int m, int n, int k, int64_t xq_stride, int64_t w_stride,
                              int64_t y_stride);

// One GEMM on the given kernel (the dispatch picks it by cutlass_fp8_tile_for; tests and
// benchmarks compare them):
//   xq [M, K] e4m3 (row stride xq_stride bytes), x_scale [M] fp32 (per token),
//   wq [N, K] e4m3 (row stride w_stride bytes), w_scale [N] fp32 (per channel),
//   y [M, N] fp16 (row stride y_stride elements).
Status cutlass_fp8_gemm(CutlassFp8Tile tile, const uint8_t* xq, int64_t xq_stride, const float* x_scale,
                        const uint8_t* wq, int64_t w_stride, const float* w_scale, uint16_t* y, int64_t y_stride, int m,
                        int n, int k, cudaStream_t stream);

// W8A8-INT8 on the same kernels (the same tiles, the same choice by shape, the same layout rules):
// int8 xq [M, K] and wq [N, K], exact int32 sums, y = fp16((float(sum) * x_scale[m]) * w_scale[n]),
// bit for bit kernels/int8.h's reference.
Status cutlass_int8_gemm(CutlassFp8Tile tile, const int8_t* xq, int64_t xq_stride, const float* x_scale,
                         const int8_t* wq, int64_t w_stride, const float* w_scale, uint16_t* y, int64_t y_stride, int m,
                         int n, int k, cudaStream_t stream);
Status cutlass_int8_gemm_check(CutlassFp8Tile tile, int m, int n, int k, int64_t xq_stride, int64_t w_stride,
                               int64_t y_stride);

}  // namespace crosspoint::cuda
