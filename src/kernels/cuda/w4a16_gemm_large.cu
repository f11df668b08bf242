// kLargeTile of w4a16_gemm.h: the W4A16 GEMM where the wgmma kernel cannot run (devices other
// than compute capability 9.0, N not a multiple of 64), from tens to thousands of rows.
//
// Block: 2 (along M) x 4 (along N) warps; warp tile kMTiles m16 tiles x 2 n16 blocks, so a
// block covers 32 * kMTiles rows (32, 64 or 128, chosen by M) x 128 columns. Every weight word
// is dequantised by 2 warps (one per M half) and then feeds 2 * kMTiles MMAs in each of them.
// Activation fragments come from shared memory with one ldmatrix.x4 per m16 x k16 tile.
// Weights, scales and activations stream through a kStages-deep cp.async pipeline in 64-deep
// k chunks (one wait + barrier per chunk). K is never split, so no sum depends on the order
// blocks finish in. Layout: w4a16_gemm.h.
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>

#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/device_info.h"
#include "kernels/cuda/w4a16_fragments.cuh"
#include "kernels/cuda/w4a16_gemm.h"
#include "kernels/cuda/w4a16_pipeline.cuh"

namespace crosspoint::cuda {
namespace {

using w4a16_internal::cp_async_16;
using w4a16_internal::cp_async_commit;
using w4a16_internal::cp_async_wait;
using w4a16_internal::dequant_word;
using w4a16_internal::dequant_word_zero;
using w4a16_internal::ldmatrix_x4;
using w4a16_internal::mma_m16n8k16;

constexpr int kWarpsM = 2;       // warps stacked along M
constexpr int kWarpNBlocks = 2;  // n16 blocks per warp
constexpr int kChunkK = 64;      // input rows per packed chunk (4 mma k-steps)
constexpr int kARowStride = 72;  // fp16 per staged activation row: 144 B rows keep 16-byte
                                 // alignment and put the 8 rows of each ldmatrix 8x8 matrix
                                 // in 8 different 16-byte bank groups (conflict free)

constexpr int kWarpsN = 4;                             // warps side by side along N
constexpr int kThreads = kWarpsM * kWarpsN * 32;       // 256
constexpr int kBlockNBlocks = kWarpsN * kWarpNBlocks;  // n16 blocks per block
constexpr int kBlockCols = kBlockNBlocks * 16;         // 128 columns

// The per-group values of a stage beyond the scales, each laid out as the scales: the zero
// points (kZeros, half2 (1024 + z[c], 1024 + z[c+8])), and with groups of 32 rows (kHalfGroups)
// the chunk's second group's scales and zero points. Slots in that order, absent ones skipped.
template <bool kZeros, bool kHalfGroups>
struct GroupSlots {
  static constexpr int kCount = (kZeros ? 1 : 0) + (kHalfGroups ? 1 : 0) + (kZeros && kHalfGroups ? 1 : 0);
  static constexpr int kZero = 0;
  static constexpr int kScale2 = kZeros ? 1 : 0;
  static constexpr int kZero2 = 2;
};
template <int kCount>
struct LargeStageExtra {
  uint32_t extra[kCount][kBlockNBlocks][8];
};
template <>
struct LargeStageExtra<0> {};

// One pipeline stage: everything the block needs for one 64-deep k chunk (symmetric weights in
// groups of 64 or more rows: the empty base adds nothing).
template <int kMTiles, bool kZeros, bool kHalfGroups>
struct LargeStage : LargeStageExtra<GroupSlots<kZeros, kHalfGroups>::kCount> {
  static constexpr int kRows = kWarpsM * kMTiles * 16;
  uint4 weight[kBlockNBlocks][32];    // packed int4: [n16 block][lane] 16 bytes (4 KB)
  uint32_t scales[kBlockNBlocks][8];  // half2 (s[c], s[c+8]) per n16 block and c = lane / 4
  uint16_t a[kRows][kARowStride];     // activation rows m0 .. m0 + kRows - 1 of the chunk, fp16
};

// grid = (ceil(N / 128), 1, ceil(M / (32 * kMTiles))). Rows of the staged activation tile at
// or beyond m are never copied (stale shared memory); they only feed output rows that are
// never stored, because an MMA's output row depends on its own A row alone.
template <int kMTiles, int kStages, int kMinBlocksPerSm, bool kZeros, bool kHalfGroups>
__global__ void __launch_bounds__(kThreads, kMinBlocksPerSm)
    w4a16_gemm_large_kernel(const uint16_t* __restrict__ x, int64_t x_stride, const uint4* __restrict__ packed_weight,
                            const uint32_t* __restrict__ packed_scales, const uint32_t* __restrict__ packed_zeros,
                            uint16_t* __restrict__ y, int64_t y_stride, int m, int n, int k, int group_size) {
  using StageT = LargeStage<kMTiles, kZeros, kHalfGroups>;
  using Slots = GroupSlots<kZeros, kHalfGroups>;
  constexpr int kBlockRows = StageT::kRows;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  StageT* stages = reinterpret_cast<StageT*>(smem_raw);
  const int tid = threadIdx.x;
  const int lane = tid % 32;
  const int warp = tid / 32;
  const int warp_m = warp / kWarpsN;  // which M half of the block
  const int warp_n = warp % kWarpsN;  // which 32-column slice of the block
  const int num_n_blocks = n / 16;
  const int num_k_chunks = k / kChunkK;
  const int nb0 = blockIdx.x * kBlockNBlocks;
  const int m0 = blockIdx.z * kBlockRows;
  const int rows = min(kBlockRows, m - m0);     // valid activation rows of this block
  const int warp_row0 = warp_m * kMTiles * 16;  // first block row of this warp's tiles
  const bool warp_has_rows = warp_row0 < rows;  // warp-uniform: all-padding warps skip the math
  const int num_chunks = num_k_chunks;

  // Per-thread sources of the stage copies, fixed for the whole k loop (one 16-byte copy per
  // piece): weight piece (n16 block tid / 32, lane); scale half (tid / 2, tid % 2) for the
  // first 16 threads; activation pieces (row tid / 8 + 32 * it, columns (tid % 8) * 8 ..+7).
  static_assert(kBlockNBlocks * 32 == kThreads, "one 16-byte weight copy per thread");
  constexpr int kARowsPerPass = kThreads / 8;  // activation rows per pass of all threads (32)
  constexpr int kAPasses = (kBlockRows + kARowsPerPass - 1) / kARowsPerPass;  // 1 to 4
  const uint4* weight_src;
  {
    const int nb = min(nb0 + tid / 32, num_n_blocks - 1);  // tail blocks copy a valid block, never stored
    weight_src = packed_weight + static_cast<int64_t>(nb) * num_k_chunks * 32 + lane;
  }
  const bool copies_scales = tid < kBlockNBlocks * 2;
  const uint32_t* scale_src;
  {
    const int nb = min(nb0 + tid / 2 % kBlockNBlocks, num_n_blocks - 1);
    scale_src = packed_scales + static_cast<int64_t>(nb) * 8 + (tid % 2) * 4;
  }
  // The extra slots: slot e is copied by the next 16 threads after slot e - 1's, the same way.
  static_assert(kBlockNBlocks * 2 * (1 + Slots::kCount) <= kThreads, "one 16-byte group copy per thread");
  const int slot = tid / (kBlockNBlocks * 2) - 1;  // -1: the scales' threads (or none)
  const bool copies_extra = slot >= 0 && slot < Slots::kCount;
  const int et = tid % (kBlockNBlocks * 2);
  const uint32_t* extra_src = nullptr;  // the slot's source at group 0
  int extra_group_offset = 0;           // 1 for the second group's slots
  if (copies_extra) {
    const bool zeros = kZeros && (slot == Slots::kZero || (kHalfGroups && slot == Slots::kZero2));
    extra_group_offset = kHalfGroups && slot >= Slots::kScale2 ? 1 : 0;  // the chunk's second group
    const int nb = min(nb0 + et / 2 % kBlockNBlocks, num_n_blocks - 1);
    extra_src = (zeros ? packed_zeros : packed_scales) + static_cast<int64_t>(nb) * 8 + (et % 2) * 4;
  }
  const int a_row = tid / 8, a_col = (tid % 8) * 8;
  const uint16_t* a_src = x + static_cast<int64_t>(m0 + a_row) * x_stride + a_col;
  const int64_t a_pass_stride = static_cast<int64_t>(kARowsPerPass) * x_stride;

  // Chunks are loaded in order 0, 1, ...: the scale group of the next load advances with a
  // counter instead of a division per chunk. group_size is a multiple of 64 (or all of K,
  // itself a multiple of 64), so groups hold whole chunks; or 32 (kHalfGroups): two groups a
  // chunk, 2 kc and 2 kc + 1.
  const int chunks_per_group = kHalfGroups ? 1 : group_size / kChunkK;
  constexpr int kGroupsPerChunk = kHalfGroups ? 2 : 1;
  int load_group = 0;  // group of the next chunk loaded
  int load_chunk_in_group = 0;

  // Issues the cp.async copies of chunk kc (the next in order) into stage st (all threads take part).
  auto load_stage = [&](int st, int kc) {
    StageT& dst = stages[st];
    cp_async_16(&dst.weight[tid / 32][lane], weight_src + static_cast<int64_t>(kc) * 32);
    if (copies_scales) {
      cp_async_16(&dst.scales[tid / 2][(tid % 2) * 4], scale_src + static_cast<int64_t>(load_group) * num_n_blocks * 8);
    }
    if constexpr (Slots::kCount > 0) {
      if (copies_extra) {
        cp_async_16(&dst.extra[slot][et / 2][(et % 2) * 4],
                    extra_src + static_cast<int64_t>(load_group + extra_group_offset) * num_n_blocks * 8);
      }
    }
    if (++load_chunk_in_group == chunks_per_group) {
      load_chunk_in_group = 0;
      load_group += kGroupsPerChunk;
    }
#pragma unroll
    for (int it = 0; it < kAPasses; ++it) {
      if (a_row + it * kARowsPerPass < rows) {
        cp_async_16(&dst.a[a_row + it * kARowsPerPass][a_col], a_src + it * a_pass_stride + kc * kChunkK);
      }
    }
  };

  float acc[kMTiles][kWarpNBlocks][2][4] = {};  // [m16 tile][n16 block][n8 half][C fragment]
  const int frag_row = lane / 4;                // C fragment row within an m16 tile
  const int frag_col = (lane % 4) * 2;          // C fragment column offset within an n8 half
  const int ld_row = lane % 16;                 // ldmatrix: the tile row whose 16-byte piece this lane names
  const int ld_col = (lane / 16) * 8;           // ... and which k half of the k16 step

#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < num_chunks) load_stage(s, s);
    cp_async_commit();
  }
  for (int i = 0; i < num_chunks; ++i) {
    cp_async_wait<kStages - 2>();
    __syncthreads();  // chunk i has landed for everyone; stage (i-1) % kStages is free again
    if (i + kStages - 1 < num_chunks) load_stage((i + kStages - 1) % kStages, i + kStages - 1);
    cp_async_commit();
    if (!warp_has_rows) continue;
    const StageT& st = stages[i % kStages];
    uint4 w[kWarpNBlocks];
    // [group of the chunk][n16 block][n8 half] the group scale of column c (+8), and the zero pairs
    half2 scale[kGroupsPerChunk][kWarpNBlocks][2];
    uint32_t zero_pair[kGroupsPerChunk][kWarpNBlocks] = {};
#pragma unroll
    for (int b = 0; b < kWarpNBlocks; ++b) {
      const int block = warp_n * kWarpNBlocks + b;
      w[b] = st.weight[block][lane];
#pragma unroll
      for (int h = 0; h < kGroupsPerChunk; ++h) {
        uint32_t sp = st.scales[block][lane / 4];
        if constexpr (kHalfGroups) {
          if (h == 1) sp = st.extra[Slots::kScale2][block][lane / 4];
        }
        if constexpr (kZeros) zero_pair[h][b] = st.extra[h == 0 ? Slots::kZero : Slots::kZero2][block][lane / 4];
        const half2 pair = *reinterpret_cast<const half2*>(&sp);
        scale[h][b][0] = __low2half2(pair);
        scale[h][b][1] = __high2half2(pair);
      }
    }
    uint32_t a_frag[2][4];  // A fragments of the current and the next (k16 step, m16 tile), double-buffered
    ldmatrix_x4(a_frag[0], &st.a[warp_row0 + ld_row][ld_col]);
#pragma unroll
    for (int j = 0; j < 4; ++j) {  // k16 steps of the chunk
      // Dequantise this warp's two weight words first, then walk the m16 tiles: one
      // ldmatrix and 4 MMAs per tile, so at most two A fragments are live at a time.
      uint32_t b_frag[kWarpNBlocks][4];  // [n16 block] B fragments (b0 b1 of half 0, of half 1), fp16 pairs
#pragma unroll
      for (int b = 0; b < kWarpNBlocks; ++b) {
        const uint32_t word = j == 0 ? w[b].x : j == 1 ? w[b].y : j == 2 ? w[b].z : w[b].w;
        const int h = kHalfGroups && j >= 2 ? 1 : 0;  // the group of this k16 step
        half2 frag[4];
        if constexpr (kZeros) {
          dequant_word_zero(word, zero_pair[h][b], frag);
        } else {
          dequant_word(word, frag);
        }
        frag[0] = __hmul2(frag[0], scale[h][b][0]);
        frag[1] = __hmul2(frag[1], scale[h][b][0]);
        frag[2] = __hmul2(frag[2], scale[h][b][1]);
        frag[3] = __hmul2(frag[3], scale[h][b][1]);
#pragma unroll
        for (int r = 0; r < 4; ++r) b_frag[b][r] = *reinterpret_cast<const uint32_t*>(&frag[r]);
      }
#pragma unroll
      for (int t = 0; t < kMTiles; ++t) {
        // Fetch the next (k16 step, m16 tile) A fragment before this one's MMAs, so the
        // ldmatrix latency hides behind them (the asm statements keep program order).
        const int step = j * kMTiles + t;
        if (step + 1 < 4 * kMTiles) {
          const int next_j = (step + 1) / kMTiles, next_t = (step + 1) % kMTiles;
          ldmatrix_x4(a_frag[(step + 1) % 2], &st.a[warp_row0 + next_t * 16 + ld_row][next_j * 16 + ld_col]);
        }
#pragma unroll
        for (int b = 0; b < kWarpNBlocks; ++b) {
          mma_m16n8k16(acc[t][b][0], a_frag[step % 2], b_frag[b][0], b_frag[b][1]);
          mma_m16n8k16(acc[t][b][1], a_frag[step % 2], b_frag[b][2], b_frag[b][3]);
        }
      }
    }
  }
  cp_async_wait<0>();

  // C fragment element pairs (r = 0,1: row frag_row; r = 2,3: row frag_row + 8) are two
  // adjacent columns, so they move as one half2.
  if (!warp_has_rows) return;
  const bool y_pairs_aligned = y_stride % 2 == 0 && reinterpret_cast<uintptr_t>(y) % 4 == 0;  // half2 stores allowed
#pragma unroll
  for (int t = 0; t < kMTiles; ++t)
#pragma unroll
    for (int b = 0; b < kWarpNBlocks; ++b)
#pragma unroll
      for (int h = 0; h < 2; ++h)
#pragma unroll
        for (int p = 0; p < 2; ++p) {
          const int row = m0 + warp_row0 + t * 16 + frag_row + p * 8;
          const int col = (nb0 + warp_n * kWarpNBlocks + b) * 16 + h * 8 + frag_col;
          if (row >= m || col >= n) continue;
          const float v0 = acc[t][b][h][2 * p], v1 = acc[t][b][h][2 * p + 1];
          uint16_t* dst = y + row * y_stride + col;
          if (y_pairs_aligned) {
            *reinterpret_cast<half2*>(dst) = __floats2half2_rn(v0, v1);
          } else {
            dst[0] = __half_as_ushort(__float2half_rn(v0));
            dst[1] = __half_as_ushort(__float2half_rn(v1));
          }
        }
}

template <int kMTiles, int kStages, int kMinBlocksPerSm, bool kZeros, bool kHalfGroups>
Status launch_large(const uint16_t* x, int64_t x_stride, const uint32_t* packed_weight, const uint32_t* packed_scales,
                    const uint32_t* packed_zeros, uint16_t* y, int64_t y_stride, int m, int n, int k, int group_size,
                    cudaStream_t stream) {
  constexpr auto kKernel = w4a16_gemm_large_kernel<kMTiles, kStages, kMinBlocksPerSm, kZeros, kHalfGroups>;
  constexpr size_t kSmemBytes = sizeof(LargeStage<kMTiles, kZeros, kHalfGroups>) * kStages;
  static const int blocks_per_sm = resident_blocks_per_sm(kKernel, kThreads, kSmemBytes);  // once per instantiation
  if (blocks_per_sm <= 0) {
    return internal_error("w4a16_gemm_large: kernel with " + std::to_string(kSmemBytes) +
                          " bytes of shared memory cannot be resident on this device");
  }
  const W4A16LargePlan plan = w4a16_large_plan(m, n);
  const dim3 grid(plan.grid_n, 1, plan.grid_m);
  kKernel<<<grid, kThreads, kSmemBytes, stream>>>(x, x_stride, reinterpret_cast<const uint4*>(packed_weight),
                                                  packed_scales, packed_zeros, y, y_stride, m, n, k, group_size);
  return last_launch_status("w4a16_gemm_large launch");
}

}  // namespace

int w4a16_large_block_rows(int m) { return m <= 32 ? 32 : m <= 64 ? 64 : 128; }

W4A16LargePlan w4a16_large_plan(int m, int n) {
  W4A16LargePlan plan;
  plan.block_rows = w4a16_large_block_rows(m);
  plan.block_cols = kBlockCols;
  plan.grid_n = (n + kBlockCols - 1) / kBlockCols;
  plan.grid_m = (m + plan.block_rows - 1) / plan.block_rows;
  return plan;
}

namespace {

template <bool kZeros, bool kHalfGroups>
Status launch_large_for_rows(const uint16_t* x, int64_t x_stride, const uint32_t* packed_weight,
                             const uint32_t* packed_scales, const uint32_t* packed_zeros, uint16_t* y, int64_t y_stride,
                             int m, int n, int k, int group_size, cudaStream_t stream) {
  // Stages: as deep as two blocks per SM allow; minimum blocks per SM as the registers allow.
  switch (w4a16_large_block_rows(m)) {
    case 32:
      return launch_large<1, 8, 3, kZeros, kHalfGroups>(x, x_stride, packed_weight, packed_scales, packed_zeros, y,
                                                        y_stride, m, n, k, group_size, stream);
    case 64:
      return launch_large<2, 6, 2, kZeros, kHalfGroups>(x, x_stride, packed_weight, packed_scales, packed_zeros, y,
                                                        y_stride, m, n, k, group_size, stream);
    default:
      return launch_large<4, 4, 2, kZeros, kHalfGroups>(x, x_stride, packed_weight, packed_scales, packed_zeros, y,
                                                        y_stride, m, n, k, group_size, stream);
  }
}

}  // namespace

Status w4a16_gemm_large(const uint16_t* x, int64_t x_stride, const uint32_t* packed_weight,
                        const uint32_t* packed_scales, uint16_t* y, int64_t y_stride, int m, int n, int k,
                        int group_size, cudaStream_t stream, const uint32_t* packed_zeros) {
  const bool zeros = packed_zeros != nullptr, half_groups = group_size == 32;
  if (zeros && half_groups)
    return launch_large_for_rows<true, true>(x, x_stride, packed_weight, packed_scales, packed_zeros, y, y_stride, m, n,
                                             k, group_size, stream);
  if (zeros)
    return launch_large_for_rows<true, false>(x, x_stride, packed_weight, packed_scales, packed_zeros, y, y_stride, m,
                                              n, k, group_size, stream);
  if (half_groups)
    return launch_large_for_rows<false, true>(x, x_stride, packed_weight, packed_scales, nullptr, y, y_stride, m, n, k,
                                              group_size, stream);
  return launch_large_for_rows<false, false>(x, x_stride, packed_weight, packed_scales, nullptr, y, y_stride, m, n, k,
                                             group_size, stream);
}

}  // namespace crosspoint::cuda
