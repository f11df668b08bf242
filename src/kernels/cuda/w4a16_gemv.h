// W4A16 small-batch GEMM (M <= 8): y[M, N] fp16 = x[M, K] fp16 · W[K, N] with W in the packed
// int4 layout of w4a16_gemm.h (no other repack), built to stream the weights at HBM speed.
//
// Roles are swapped against w4a16_gemm: a 16x16 weight tile is the A operand of
// mma.m16n8k16 (16 rows = 16 output columns n) and the activations are the B operand
// (8 columns = up to 8 tokens), so one MMA per tile serves every token. The packed
// word's dequantised pairs {(n=c, k0..), (n=c, k0+8..), (n=c+8, k0..), (n=c+8, k0+8..)} are
// exactly the A fragment registers {a0, a2, a1, a3}. A block owns one n16 block, its warps take
// its 64-deep k chunks in turn (warp w: chunks w, w + warps, ...), each streaming the weights
// straight into registers (16-byte loads, 4 chunks in flight per lane), and their partial sums
// meet in shared memory. One token's activations come from global memory; from 2 rows (x
// 16-byte aligned) each warp copies its chunks' rows into a shared-memory ring of its own and
// reads them with ldmatrix. No workspace, no atomics: deterministic.
// Launched as a programmatic dependent launch (programmatic_launch.cuh) where enabled: the
// first weight loads overlap the previous kernel, x is read only after it completes.
//
// w4a16_gemm() calls this for m <= kW4A16GemvMaxRows.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "common/status.h"

namespace crosspoint::cuda {

// Tokens one launch serves: the MMA's n = 8.
inline constexpr int kW4A16GemvKernelMaxRows = 8;
// Rows w4a16_gemm() sends here (w4a16_gemm.h explains the choice).
inline constexpr int kW4A16GemvMaxRows = 8;
static_assert(kW4A16GemvMaxRows <= kW4A16GemvKernelMaxRows);

// Grid the host picks: one block per n16 block of output columns, `warps_per_block` warps
// sharing its K/64 chunks round-robin.
struct W4A16GemvShape {
  int num_blocks = 0;       // N / 16
  int warps_per_block = 0;  // 1 .. 32
};

// Pure host logic (tested without a GPU): as many warps per block as keep every block of
// the grid resident in one wave (`max_warps_per_sm` per SM, `num_sms` SMs), at most 32,
// and no more than leave each warp >= 2 chunks where K allows it.
W4A16GemvShape w4a16_gemv_shape(int n, int k, int num_sms, int max_warps_per_sm);

// y[m, n] = sum_k x[m, k] * s[g(k), n] * (q[k, n] - z[g(k), n]), fp32 accumulation, fp16 out;
// z = 8 without packed_zeros.
//   x              [M, K] fp16, row stride x_stride elements (multiple of 8, >= K);
//                  permuted first (w4a16_permute_columns) for act-order weights
//   packed_weight  W4A16PackedWeight::weight on the device  [N/16][K/64][32][4] uint32
//   packed_scales  W4A16PackedWeight::scales on the device  [ceil(K/G)][N/16][8] half2
//   packed_zeros   W4A16PackedWeight::zeros on the device (same layout), or nullptr (symmetric)
//   y              [M, N] fp16, row stride y_stride elements (>= N)
//   m              1 .. kW4A16GemvKernelMaxRows (0 is a no-op); K % 64 == 0 (K < 2^22), N % 16 == 0, G -1, 32
//                  or a multiple of 64
// warps_per_block 0 lets w4a16_gemv_shape() choose; 1..32 forces it (benchmarks).
Status w4a16_gemv(const uint16_t* x, int64_t x_stride, const uint32_t* packed_weight, const uint32_t* packed_scales,
                  uint16_t* y, int64_t y_stride, int m, int n, int k, int group_size, cudaStream_t stream,
                  int warps_per_block = 0, const uint32_t* packed_zeros = nullptr);

}  // namespace crosspoint::cuda
