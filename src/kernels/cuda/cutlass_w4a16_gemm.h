// W4A16 GEMM on Hopper through CUTLASS's mixed-input warp-specialised TMA kernels:
//   y[M, N] fp16 = x[M, K] fp16 · (s[g(k), n] * (q[k, n] - 8))^T      fp32 sums
// Operands swapped as in cutlass_fp8_gemm.h: the int4 weights are CUTLASS's A, loaded by TMA,
// moved from shared memory to registers, converted to fp16 and scaled there (the narrow type
// always goes through registers), and fed to wgmma from registers; the 16..128-token
// activation tile is B in shared memory. K split into equal slices with fp32 partial sums
// where the channel tiles alone leave SMs idle, added in slice order by split_k_sum_to_f16.
//
// The weights need their own layout, made once at load from the W4A16PackedWeight of
// w4a16_repack (so act-order, group checks and the input-row permutation are shared): signed
// int4 (q - 8) in the order CUTLASS's reordering atom for a wgmma A fragment asks, each
// thread's 8 values in one 32-bit word; scales fp16 [groups][N].
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/status.h"
#include "kernels/cuda/w4a16_gemm.h"

namespace crosspoint::cuda {

struct CutlassW4A16Weight {
  int num_in_features = 0;       // K
  int num_out_features = 0;      // N
  int group_size = 0;            // G (K for one group)
  std::vector<uint8_t> weight;   // N*K/2 bytes, CUTLASS's reordered int4 layout
  std::vector<uint16_t> scales;  // [ceil(K/G)][N] fp16 bits
};

// The CUTLASS layout of a repacked weight (host; K % 64 == 0, N % 64 == 0). Unsupported in a
// build without the sm_90a kernels.
Result<CutlassW4A16Weight> cutlass_w4a16_pack(const W4A16PackedWeight& packed);

// The signed nibble at (row n, column k) of a CutlassW4A16Weight (tests).
Result<int> cutlass_w4a16_weight_at(const CutlassW4A16Weight& w, int n, int k);

enum class CutlassW4A16Tile { k64x16, k64x32, k64x64, k128x128 };
const char* cutlass_w4a16_tile_name(CutlassW4A16Tile tile);

struct CutlassW4A16Plan {
  CutlassW4A16Tile tile = CutlassW4A16Tile::k64x16;
  int k_splits = 1;
};

// Tile by M and a K split that fills one wave (host; tested on the CPU). Slices keep whole
// scale groups. force_k_splits > 0 takes that split where the shape allows it.
CutlassW4A16Plan cutlass_w4a16_plan(int m, int n, int k, int group_size, int num_sms, int force_k_splits = 0);
size_t cutlass_w4a16_workspace_bytes(const CutlassW4A16Plan& plan, int m, int n);
bool cutlass_w4a16_available();

// Whether cutlass_w4a16_gemm takes these sizes: the launcher's refusals and CUTLASS's own
// can_implement, without a GPU (host; unsupported in a build without the sm_90a kernels).
Status cutlass_w4a16_gemm_check(int m, int n, int k, int group_size, int64_t x_stride, int64_t y_stride,
                                const CutlassW4A16Plan& plan);

//   x        [M, K] fp16, row stride x_stride elements (multiple of 8), permuted when k_perm
//   weight   device copy of CutlassW4A16Weight::weight
//   scales   device copy of CutlassW4A16Weight::scales
//   y        [M, N] fp16, row stride y_stride elements (multiple of 8)
Status cutlass_w4a16_gemm(const uint16_t* x, int64_t x_stride, const uint8_t* weight, const uint16_t* scales,
                          uint16_t* y, int64_t y_stride, int m, int n, int k, int group_size,
                          const CutlassW4A16Plan& plan, float* workspace, size_t workspace_bytes, cudaStream_t stream);

}  // namespace crosspoint::cuda
