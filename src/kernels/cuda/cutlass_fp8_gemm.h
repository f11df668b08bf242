// W8A8-FP8 GEMM on Hopper through CUTLASS's warp-specialised TMA kernels, for the rows where
// the decode step is neither a GEMV nor a large GEMM (tens to hundreds of tokens):
//   y[M, N] fp16 = x_scale[m] * w_scale[n] * (xq[M, K] · wq[N, K]^T)          (e4m3, fp32 sums)
// Operands swapped: CUTLASS computes D[N, M] = W[N, K] · X[M, K]^T, so the weights' output
// channels are the tile's wide side and the few tokens its narrow side (16 to 128), and a
// token tile never pads to 64 or 128 rows. A producer warp streams W and X tiles through a
// TMA + mbarrier ring; one or two consumer warpgroups run e4m3 wgmmas, promoting their sums
// to fp32 registers every few k-blocks (CUTLASS's default FP8 mainloop, not the fast-accumulate
// one); the epilogue multiplies by both scales and stores fp16 through TMA.
//
// K split: where the channel tiles alone leave SMs idle (o_proj, down_proj: 3,584 channels),
// the K range is cut into k_splits equal slices run as a batch of GEMMs, each writing its
// scaled fp32 partial sums to a workspace [k_splits][M][N]; a second kernel adds the slices in
// slice order and rounds to fp16. No atomics: the same bits every run.
//
// Needs compute capability 9.0 and a binary built for sm_90a (cutlass_fp8_available());
// K, the strides and the pointers 16-byte aligned and N a multiple of 8, as TMA wants
// (refused with a Status).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "common/status.h"

namespace crosspoint::cuda {

// Output channels x tokens of one CTA's tile.
enum class CutlassFp8Tile { k64x16, k64x32, k64x64, k128x128 };
const char* cutlass_fp8_tile_name(CutlassFp8Tile tile);

struct CutlassFp8Plan {
  CutlassFp8Tile tile = CutlassFp8Tile::k64x16;
  int k_splits = 1;  // 1: fp16 straight from the GEMM's epilogue
};

// The tile for M rows and the K split that fills the SMs with one wave (host only; tested on
// the CPU). force_k_splits > 0 takes that split where the shape allows it (benchmarks).
CutlassFp8Plan cutlass_fp8_plan(int m, int n, int k, int num_sms, int force_k_splits = 0);

// Device bytes of fp32 partial sums a plan needs (0 without a K split).
size_t cutlass_fp8_workspace_bytes(const CutlassFp8Plan& plan, int m, int n);

// Whether this device and binary run the kernels (compute capability 9.0, sm_90a image).
bool cutlass_fp8_available();

// Whether cutlass_fp8_gemm takes these sizes and strides: the launcher's refusals and CUTLASS's
// own can_implement, without a GPU (host; unsupported in a build without the sm_90a kernels).
Status cutlass_fp8_gemm_check(int m, int n, int k, int64_t xq_stride, int64_t w_stride, int64_t y_stride,
                              const CutlassFp8Plan& plan);

//   xq [M, K] e4m3 (row stride xq_stride bytes), x_scale [M] fp32 (per token),
//   wq [N, K] e4m3 (row stride w_stride bytes), w_scale [N] fp32 (per channel),
//   y [M, N] fp16 (row stride y_stride elements);
//   workspace: cutlass_fp8_workspace_bytes(plan, m, n) device bytes (may be null without a split).
Status cutlass_fp8_gemm(const uint8_t* xq, int64_t xq_stride, const float* x_scale, const uint8_t* wq,
                        int64_t w_stride, const float* w_scale, uint16_t* y, int64_t y_stride, int m, int n, int k,
                        const CutlassFp8Plan& plan, float* workspace, size_t workspace_bytes, cudaStream_t stream);

}  // namespace crosspoint::cuda
