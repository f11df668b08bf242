// W4A16 GEMM: y[M, N] fp16 = x[M, K] fp16 · W[K, N], W stored as GPTQ-style symmetric int4
// (zero point 8) with one fp16 scale per (group of G input rows, output column).
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
//
// Act-order (desc_act) checkpoints: repack sorts the input rows by g_idx (stable), so each
// group's rows become contiguous; the activations must then be permuted the same way with
// w4a16_permute_columns() before the GEMM (x'[:, i] = x[:, k_perm[i]]).
//
// Limits: K % 64 == 0, N % 16 == 0, group size a multiple of 64 (or -1: one group over all
// of K); other shapes are refused with a Status naming the field.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/status.h"

namespace crosspoint::cuda {

// Host-side result of the load-time re-layout.
struct W4A16PackedWeight {
  int num_in_features = 0;    // K
  int num_out_features = 0;   // N
  int group_size = 0;         // G (K when the checkpoint says -1)
  std::vector<uint32_t> weight;  // [N/16][K/64][32][4] int4 nibbles, layout above
  std::vector<uint32_t> scales;  // [ceil(K/G)][N/16][8] half2 pairs, layout above
  // Input-row order the packed weight expects: packed row i is checkpoint row k_perm[i].
  // Empty when g_idx is absent or already k/G (no permutation needed).
  std::vector<int32_t> k_perm;
};

// Re-lays out a GPTQ int4 linear (bits 4, sym true: zero point 8, qzeros not read).
//   qweight  [K/8, N] int32, row r holds input rows 8r..8r+7, low nibble first
//   scales   [ceil(K/G), N] fp16 bits
//   g_idx    [K] int32 or nullptr (then group of row k is k / G)
// group_size -1 means one group over all of K. `name` prefixes error messages.
Result<W4A16PackedWeight> w4a16_repack(const int32_t* qweight, const uint16_t* scales,
                                       const int32_t* g_idx, int num_in_features,
                                       int num_out_features, int group_size,
                                       const char* name);

// Bytes of the fp32 split-K scratch and tile counters for problems up to max_m rows and
// n columns. The caller allocates it, zero-fills it once (cudaMemset) and may reuse it for
// every W4A16 GEMM of at most that size on one stream: each launch leaves it zeroed.
size_t w4a16_workspace_bytes(int max_m, int n);

// y[m, n] = sum_k x[m, k] * s[g(k), n] * (q[k, n] - 8), fp32 accumulation, fp16 out.
// M <= 8 goes to w4a16_gemv() (w4a16_gemv.h: workspace unused); larger M to the
// shared-memory pipeline below (w4a16_gemm_tuned with kDefault).
//   x              [M, K] fp16, row stride x_stride elements (even), permuted when k_perm
//   packed_weight  device copy of W4A16PackedWeight::weight
//   packed_scales  device copy of W4A16PackedWeight::scales
//   y              [M, N] fp16, row stride y_stride elements
//   workspace      w4a16_workspace_bytes(>= M, N) bytes, zero-filled before first use
Status w4a16_gemm(const uint16_t* x, int64_t x_stride, const uint32_t* packed_weight,
                  const uint32_t* packed_scales, uint16_t* y, int64_t y_stride, int m, int n,
                  int k, int group_size, void* workspace, cudaStream_t stream);

// Launch shapes of the shared-memory pipeline kernel at M <= 16, for benchmarking; this
// always runs that kernel (never w4a16_gemv); w4a16_gemm uses kDefault for M > 8.
//   kDefault      block 4 warps x 64 columns each, 4-stage pipeline, ~3 blocks per SM
//   kDeepPipeline same block, 8 stages, ~2 blocks per SM
//   kNarrowBlocks 4 warps x 32 columns, 6 stages, ~5 blocks per SM
//   kMoreSplits   as kDefault with ~8 blocks per SM worth of k splits
enum class W4A16Tuning { kDefault, kDeepPipeline, kNarrowBlocks, kMoreSplits };
Status w4a16_gemm_tuned(W4A16Tuning tuning, const uint16_t* x, int64_t x_stride, const uint32_t* packed_weight,
                        const uint32_t* packed_scales, uint16_t* y, int64_t y_stride, int m, int n, int k,
                        int group_size, void* workspace, cudaStream_t stream);

// x_out[m, i] = x[m, k_perm[i]]: the activation permutation act-order weights need.
//   x [M, K] fp16 (row stride K), k_perm [K] int32 (device), x_out [M, K] fp16
Status w4a16_permute_columns(const uint16_t* x, const int32_t* k_perm, uint16_t* x_out, int m,
                             int k, cudaStream_t stream);

}  // namespace crosspoint::cuda
