// W4A16 GEMM: y[M, N] fp16 = x[M, K] fp16 · W[K, N], W stored as GPTQ-style int4 with one fp16
// scale per (group of G input rows, output column), symmetric (zero point 8) or with a zero
// point 0..16 per (group, column) (asymmetric GPTQ, AWQ, compressed-tensors asymmetric).
//
// The GPTQ checkpoint layout (qweight [K/8, N] int32, scales [ceil(K/G), N] fp16, optional
// g_idx [K]) is re-laid-out once at load time by w4a16_repack() into the order the kernel's
// tensor-core fragments want:
//
//   packed_weight  uint32 [N/16][K/64][32 lanes][4]  (= N*K/8 words, N*K/2 bytes)
//     Word (nb, kc, lane, j) covers the 16x16 tile at rows k = kc*64 + j*16 .. +15 and
//     columns n = nb*16 .. +15. With c = lane/4 and k0 = (lane%4)*2 (the mma.m16n8k16
//     B-fragment coordinates), its nibbles hold q at
//       nibble 0: (k0,   c)    nibble 4: (k0+1, c)      -> fragment b0,b1 of column half 0
//       nibble 1: (k0+8, c)    nibble 5: (k0+9, c)      -> fragment b2,b3 of column half 0
//       nibble 2: (k0,   c+8)  nibble 6: (k0+1, c+8)    -> b0,b1 of column half 1
//       nibble 3: (k0+8, c+8)  nibble 7: (k0+9, c+8)    -> b2,b3 of column half 1
//     so that (w & 0x000F000F) | 0x64006400 is already the fp16 pair (1024+b0, 1024+b1).
//     One 16-byte load per lane fetches a whole 64(k) x 16(n) slab for the warp.
//   packed_scales  uint32 [num_groups][N/16][8]: half2(s[g][nb*16+c], s[g][nb*16+c+8]).
//   packed_zeros   asymmetric weights only, the same layout: half2(1024 + z[g][nb*16+c],
//     1024 + z[g][nb*16+c+8]), the value the kernels subtract from (1024 + q) for q - z exactly.
//
// Act-order (desc_act) checkpoints: repack sorts the input rows by g_idx (stable), so each
// group's rows become contiguous; the activations must then be permuted the same way with
// w4a16_permute_columns() before the GEMM (x'[:, i] = x[:, k_perm[i]]).
//
// Limits: K % 64 == 0, N % 16 == 0, group size a multiple of 64 (or -1: one group over all
// of K), or 32 (two groups in each 64-row chunk: every kernel has an instantiation that reads a
// second scale, and zero point, per chunk); other shapes are refused with a Status naming the field.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/status.h"

namespace crosspoint::cuda {

// Host-side result of the load-time re-layout.
struct W4A16PackedWeight {
  int num_in_features = 0;       // K
  int num_out_features = 0;      // N
  int group_size = 0;            // G (K when the checkpoint says -1)
  std::vector<uint32_t> weight;  // [N/16][K/64][32][4] int4 nibbles, layout above
  std::vector<uint32_t> scales;  // [ceil(K/G)][N/16][8] half2 pairs, layout above
  std::vector<uint32_t> zeros;   // the same layout, 1024 + z; empty when every zero point is 8
  // Input-row order the packed weight expects: packed row i is checkpoint row k_perm[i].
  // Empty when g_idx is absent or already k/G (no permutation needed).
  std::vector<int32_t> k_perm;
};

// Re-lays out a GPTQ int4 linear (bits 4, sym true: zero point 8, qzeros not read).
//   qweight  [K/8, N] int32, row r holds input rows 8r..8r+7, low nibble first
//   scales   [ceil(K/G), N] fp16 bits
//   g_idx    [K] int32 or nullptr (then group of row k is k / G)
// group_size -1 means one group over all of K. `name` prefixes error messages.
Result<W4A16PackedWeight> w4a16_repack(const int32_t* qweight, const uint16_t* scales, const int32_t* g_idx,
                                       int num_in_features, int num_out_features, int group_size, const char* name);

// packed_zeros of zero points z [num_groups, N] (0..16, the value subtracted from q; the groups
// in the packed rows' order), or an empty vector when every one is 8 (the symmetric kernels run).
Result<std::vector<uint32_t>> w4a16_pack_zeros(const uint8_t* zeros, int num_groups, int num_out_features,
                                               const char* name);

// The kernels w4a16_gemm chooses from, by the rows M of the call (the one place the
// thresholds are explained; measurements in docs/cuda.md):
//   M <= kW4A16GemvMaxRows (8)   kGemv (w4a16_gemv.h): weights streamed straight into registers
//                                as the MMA's A operand, the M rows as its 8-wide B operand
//                                (from 2 rows staged through shared memory); at 8 rows it took
//                                qkv, o and down in 0.64x / 0.57x / 0.80x the wgmma kernel's
//                                time and gate_up in its time on an H100.
//   M >= 9 on compute capability 9.0, N % 64 == 0 and K < 2^27
//                                kWgmma (w4a16_gemm_wgmma.cu): sm_90a warpgroup MMAs, weights
//                                as A from registers, a 16..256-row token tile as N; K split
//                                through thread-block clusters only where tiles leave SMs idle.
//   otherwise                    kLargeTile (w4a16_gemm_large.cu): mma.sync with a 2 x 4-warp
//                                block of 32..128 rows x 128 columns, never split along K.
// All three are deterministic: no reduction depends on which block finishes first.
// From kW4A16DequantMinRows rows, run_cuda_linear (model/cuda/cuda_linear.h) does not call
// w4a16_gemm: it dequantises the layer into an fp16 scratch (w4a16_dequantize.h) and runs
// cuBLASLt's fp16 GEMM. There the GEMM is bound by the tensor cores, which the fp16 GEMM keeps
// busier than the mixed-input kernels do, and the dequantisation (2.5 bytes a weight) costs
// less than the difference.
enum class W4A16Kernel { kGemv, kWgmma, kLargeTile };
inline constexpr int kW4A16DequantMinRows = 1024;
W4A16Kernel w4a16_kernel_for(int m, int n, int k, bool wgmma_supported);

// y[m, n] = sum_k x[m, k] * s[g(k), n] * (q[k, n] - z[g(k), n]), fp32 accumulation, fp16 out, on
// the kernel w4a16_kernel_for picks; z = 8 without packed_zeros.
//   x              [M, K] fp16, row stride x_stride elements (multiple of 8), permuted when k_perm
//   packed_weight  device copy of W4A16PackedWeight::weight
//   packed_scales  device copy of W4A16PackedWeight::scales
//   y              [M, N] fp16, row stride y_stride elements
//   packed_zeros   device copy of W4A16PackedWeight::zeros, or nullptr (symmetric)
Status w4a16_gemm(const uint16_t* x, int64_t x_stride, const uint32_t* packed_weight, const uint32_t* packed_scales,
                  uint16_t* y, int64_t y_stride, int m, int n, int k, int group_size, cudaStream_t stream,
                  const uint32_t* packed_zeros = nullptr);

// The same on a given kernel (tests and benchmarks compare them): shapes are checked as in
// w4a16_gemm; kGemv refuses M above kW4A16GemvKernelMaxRows, kWgmma what it cannot run.
Status w4a16_gemm_with(W4A16Kernel kernel, const uint16_t* x, int64_t x_stride, const uint32_t* packed_weight,
                       const uint32_t* packed_scales, uint16_t* y, int64_t y_stride, int m, int n, int k,
                       int group_size, cudaStream_t stream, const uint32_t* packed_zeros = nullptr);

// ---- kLargeTile (w4a16_gemm_large.cu) ----
// Launch plan (host only, so it is tested without a GPU).
struct W4A16LargePlan {
  int block_rows = 0;  // rows of M per block: w4a16_large_block_rows(M)
  int block_cols = 0;  // columns of N per block: 128
  int grid_n = 0;      // blocks along N (the last may be partial)
  int grid_m = 0;      // blocks along M
};
// Rows of M per block: 32 up to M = 32, 64 up to 64, else 128.
int w4a16_large_block_rows(int m);
W4A16LargePlan w4a16_large_plan(int m, int n);
// The kernel itself; arguments as w4a16_gemm, shapes not checked here (call it through
// w4a16_gemm_with, or with shapes that passed it).
Status w4a16_gemm_large(const uint16_t* x, int64_t x_stride, const uint32_t* packed_weight,
                        const uint32_t* packed_scales, uint16_t* y, int64_t y_stride, int m, int n, int k,
                        int group_size, cudaStream_t stream, const uint32_t* packed_zeros = nullptr);

// ---- kWgmma (w4a16_gemm_wgmma.cu) ----
// Block: 2 warpgroups x 64 output channels x a token tile of w4a16_wgmma_token_tile(M) rows:
// 16 or 32 up to that many rows, else 64; a grid dimension over token tiles above that.
// Above kW4A16WgmmaWideMinRows rows the block is wide instead: kW4A16WgmmaWideWarpGroups
// warpgroups (256 channels) over a token tile of at most 128 rows, one block per SM, so each
// activation tile copied into shared memory feeds twice the channels (at 128 rows the copies of
// the activations, not the weights, are most of what a block reads).
// Limits beyond w4a16_gemm's: N % 64 == 0, a compute capability 9.0 device, a binary built for
// sm_90a (CMAKE_CUDA_ARCHITECTURES 90a; a plain sm_90 build traps).
inline constexpr int kW4A16WgmmaWideWarpGroups = 4;
inline constexpr int kW4A16WgmmaWideMinRows = 64;  // wide blocks from 65 rows
int w4a16_wgmma_warp_groups_for(int m);
// Token rows per block for M rows on blocks of warp_groups warpgroups (2, or the wide blocks' 4:
// always 128 rows).
int w4a16_wgmma_token_tile(int m, int warp_groups = 2);
struct W4A16WgmmaPlan {
  int token_tile = 0;  // rows of M per block: w4a16_wgmma_token_tile(M, warp groups)
  int block_cols = 0;  // columns of N per block: 64 per warpgroup
  int grid_n = 0;      // blocks along N (the last may cover only part, in steps of 64)
  int grid_m = 0;      // blocks along M
  int k_splits = 1;    // blocks along K of tiles 0 .. full_tiles - 1 (> 1: a cluster adds them up)
  int full_tiles = 0;  // tiles (m fastest, then n) split k_splits ways; the rest, the tail, tail_splits ways
  int tail_splits = 1;
};
// Cost, in 64-deep chunks of one block's work, charged per split block for the cluster
// reduction of its partial sums.
inline constexpr double kW4A16WgmmaSplitCostChunks = 16.0;
// Picks k_splits minimising (waves of blocks) x (chunks per block + split cost), each split
// keeping >= 4 chunks of 64 rows of K, at most 8 splits (one cluster); then, when unsplit
// tiles fill whole waves and leave a last partial one, splits only the tiles of that last wave
// (as many ways as their clusters fit at once) where the same estimate says it pays. Host only.
// cluster_tiles_per_wave[s] (s = 1 .. 8), when given: tiles split s ways (one cluster of s blocks
// each) resident at once, as the runtime reports; else num_sms * blocks_per_sm / s.
W4A16WgmmaPlan w4a16_wgmma_plan(int m, int n, int k, int num_sms, int blocks_per_sm, double split_cost_chunks,
                                const int* cluster_tiles_per_wave = nullptr, int warp_groups = 2);
struct W4A16WgmmaOptions {
  int warp_groups = 0;  // 0: w4a16_wgmma_warp_groups_for(M); 2 or 4: that block (tests)
  double split_cost_chunks = kW4A16WgmmaSplitCostChunks;
  int k_splits = 0;    // 0: as planned; > 0: this many K splits (at most 8 and K/64), for tests
  int tail_tiles = 0;  // with k_splits > 0: the last this many tiles get tail_splits instead (tests)
  int tail_splits = 0;
};
// True when the current device can run kWgmma (compute capability 9.0).
bool w4a16_wgmma_supported();
// The kernel itself; arguments as w4a16_gemm. Refuses N % 64 != 0, K >= 2^27 and devices other
// than compute capability 9.0 (Status kUnsupported); other shapes are not checked here.
Status w4a16_gemm_wgmma(const uint16_t* x, int64_t x_stride, const uint32_t* packed_weight,
                        const uint32_t* packed_scales, uint16_t* y, int64_t y_stride, int m, int n, int k,
                        int group_size, const W4A16WgmmaOptions& options, cudaStream_t stream,
                        const uint32_t* packed_zeros = nullptr);

// x_out[m, i] = x[m, k_perm[i]]: the activation permutation act-order weights need.
//   x [M, K] fp16 (row stride K), k_perm [K] int32 (device), x_out [M, K] fp16
Status w4a16_permute_columns(const uint16_t* x, const int32_t* k_perm, uint16_t* x_out, int m, int k,
                             cudaStream_t stream);

}  // namespace crosspoint::cuda
