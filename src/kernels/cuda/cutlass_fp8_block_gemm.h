// Block-wise FP8 GEMM on CUTLASS's Hopper mainloop with per-block scaling, for the few-token
// steps (up to kCutlassFp8BlockMaxRows rows) where it streams the weights faster than
// cuBLASLt's block-scaled kernels; fp8_block_linear_from_fp16 (linear.h) picks it there.
//   y[t, n] = fp16( sum_g s_x[g, t] * s_w[g, n / 64] * sum_{k in g} xq[t, k] wq[n, k] )
// with groups g of 128 inputs, as cuBLASLt's block-scaled GEMM (cublaslt_gemm.h) computes it on
// the same operands; the fp32 sums may add in another order.
//   xq [M, K] e4m3 dense, x_scale [K / 128, M] f32 (fp8_block_quant.h's layout, stride M),
//   wq [N, K] e4m3 dense, w_scale_m64 [K / 128, ceil(N / 64)] f32 (fp8_block_scales_m64),
//   y [M, N] fp16 dense. K a multiple of 128, N of 8, M of 4 (the activations' padded rows).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "common/status.h"

namespace crosspoint::cuda {

inline constexpr int kCutlassFp8BlockMaxRows = 128;

struct CutlassFp8BlockArgs {
  const uint8_t* xq = nullptr;
  const float* x_scale = nullptr;
  const uint8_t* wq = nullptr;
  const float* w_scale_m64 = nullptr;
  uint16_t* y = nullptr;
  int m = 0, n = 0, k = 0;
  bool check_only = false;  // only whether CUTLASS can run these sizes (host; no GPU needed)
};

// The instantiated kernels (all persistent ping-pong, 64 channels a tile): tokens of a tile.
enum class CutlassFp8BlockTile { k64x16, k64x32, k64x64, k64x128 };
inline constexpr CutlassFp8BlockTile kAllCutlassFp8BlockTiles[] = {
    CutlassFp8BlockTile::k64x16, CutlassFp8BlockTile::k64x32, CutlassFp8BlockTile::k64x64,
    CutlassFp8BlockTile::k64x128};
const char* cutlass_fp8_block_tile_name(CutlassFp8BlockTile tile);
int cutlass_fp8_block_tile_tokens(CutlassFp8BlockTile tile);
// The tile the dispatch gives m (padded) rows of an n-channel linear on num_sms SMs: the
// smallest that holds them, or from 33 rows the one of half its tokens where the two token
// tiles' CTAs still fit one wave (o_proj and down_proj); none above kCutlassFp8BlockMaxRows
// (cuBLASLt).
std::optional<CutlassFp8BlockTile> cutlass_fp8_block_tile_for(int m, int n, int num_sms);

// On the dispatch's tile. Unsupported when this build has no sm_90a kernels or m > kCutlassFp8BlockMaxRows.
Status cutlass_fp8_block_gemm(const CutlassFp8BlockArgs& args, cudaStream_t stream);
// On the given tile, at any rows (tests and benchmarks compare them).
Status cutlass_fp8_block_gemm_on(CutlassFp8BlockTile tile, const CutlassFp8BlockArgs& args, cudaStream_t stream);

// The weight scales in the kernel's layout from the 128 x 128 block scales in cuBLASLt's
// (blocks [ceil(N / 128), row_floats], a row per 128 channels): each block's scale serves
// both of its 64-channel halves, the channel blocks of one K block contiguous.
std::vector<float> fp8_block_scales_m64(const float* blocks, int64_t row_floats, int n, int k);

}  // namespace crosspoint::cuda
