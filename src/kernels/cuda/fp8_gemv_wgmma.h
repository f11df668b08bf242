// Internal to gemv.cu: the W8A8 GEMV of Hopper (sm_90a). The e4m3 mma.sync that gemv.cu's
// tensor-core kernel issues is not native on sm_90: ptxas turns every m16n8k32 into e4m3 ->
// fp16 conversions (one per two bytes of both operands) and fp16 MMAs, which left that kernel
// issue-bound at ~67 % of HBM bandwidth. This kernel feeds the weights to the warpgroup MMA
// (wgmma.m64nNk32 e4m3, native FP8) straight from registers, so a 16-byte weight load costs one
// instruction and half a wgmma. Not a public API: fp8_gemv / fp8_gemv_from_fp16 dispatch here.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "common/status.h"

namespace crosspoint::cuda {

// Rows of x one launch takes: the activations are wgmma's N (8 or 16 columns).
inline constexpr int kFp8WgmmaMaxRows = 16;
// Rows the fused form (fp16 x quantised inside the kernel) takes.
inline constexpr int kFp8WgmmaFusedMaxRows = 8;
// Clusters of at most 8 blocks (the portable limit) add up the K slices of one tile.
inline constexpr int kFp8WgmmaMaxSplits = 8;

struct Fp8WgmmaGemvArgs {
  const void* x = nullptr;  // [m, k]: e4m3 codes with x_scale, or fp16 when x_scale is nullptr (fused)
  int64_t x_stride_bytes = 0;
  const float* x_scale = nullptr;  // [m] fp32, or nullptr: quantise x here (fp8_quant.h's formula)
  const uint8_t* w = nullptr;      // [n, k] e4m3
  int64_t w_stride_bytes = 0;
  const float* w_scale = nullptr;  // [n] fp32
  uint16_t* y = nullptr;           // [m, n] fp16
  int64_t y_stride = 0;            // elements
  int m = 0, n = 0, k = 0;
  uint8_t* xq_out = nullptr;  // fused only, optional: the codes [m, k] (row stride xq_out_stride)
  int64_t xq_out_stride = 0;
  float* x_scale_out = nullptr;  // fused only, optional: the scales [m]
};

// How a launch divides the work (host only; tested without a GPU).
struct Fp8WgmmaGemvPlan {
  int columns = 0;          // wgmma's N, two per token: fp8_wgmma_columns(m)
  int tiles = 0;            // 32-row tiles of the weights (output channels)
  int splits = 0;           // K slices per tile (= cluster size); 0: k too long for this kernel
  int steps_per_split = 0;  // 64-byte k steps in each slice, even (the last slice may be shorter)
};

// wgmma's N for m rows of x: 8 (m <= 4), 16 (m <= 8) or 32.
int fp8_wgmma_columns(int m);

// Picks the K split minimising (waves of blocks) x (steps per block + a reduction cost) at 4
// blocks per SM, within what one block's shared memory holds of x (4 KB of k per token). The
// split depends on (n, k) only, never on m. force_splits > 0 takes that split where shared
// memory and slices of an even number of steps allow.
Fp8WgmmaGemvPlan plan_fp8_wgmma_gemv(int m, int n, int k, int num_sms, int force_splits = 0);

// Whether this device runs the kernel (compute capability 9.0).
bool fp8_gemv_wgmma_available();

// y = (x_scale x w_scale) * xq . wq^T for 1 <= m <= kFp8WgmmaMaxRows (fused: m <=
// kFp8WgmmaFusedMaxRows), k % 16 == 0. The caller has checked shapes, strides and alignment (as
// fp8_gemv / fp8_gemv_from_fp16 do). kUnsupported when k is longer than 8 slices hold.
Status fp8_gemv_wgmma(const Fp8WgmmaGemvArgs& args, int force_splits, cudaStream_t stream);

}  // namespace crosspoint::cuda
