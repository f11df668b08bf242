// kWgmma of w4a16_gemm.h: the W4A16 GEMM on Hopper warpgroup MMAs (wgmma.mma_async, sm_90a
// only), which w4a16_gemm runs above the GEMV's rows on compute capability 9.0.
//
// Operands swapped, as in the GEMV: the WEIGHTS are wgmma's A operand (64 output channels per
// warpgroup, dequantised int4 -> fp16 in registers), the ACTIVATIONS are its B operand
// (x [tokens][64 k] tiles in shared memory, 128-byte swizzle), the token tile is wgmma's N. So
// D [64 channels x kTokens tokens] f32 lives in registers and is written transposed to
// y [token][channel]. The packed layout (w4a16_gemm.h) already holds, per lane, the
// mma.m16n8k16 fragments of a 16-channel x 64-k slab, and wgmma's A-from-registers fragment
// is, per warp of the warpgroup, exactly that m16n8k16 A fragment for rows 16 w .. 16 w + 15:
// so warp w of a warpgroup dequantises n16 block nb0 + 4 g + w as the GEMV does (wgmma.cuh has
// the fragment maps).
//
// Block: kWarpGroups warpgroups side by side along N (2: 128 output channels; the wide block's
// 4: 256), all rows of a token tile of kTokens (16, 32, 64, 128 or 256, chosen by M; a grid
// dimension over token tiles above that, e.g. prefill). Weights, scales and the activation tile of each 64-deep k chunk
// stream through a kStages-deep cp.async ring (one wait + barrier per chunk); a warp dequantises its 16-byte word group
// of a chunk into 4 k16 A fragments (double-buffered across chunks) and issues the chunk's 4 wgmmas first, then passes
// the next chunk's cp.async wait and barrier and issues the ring refill while two chunks' wgmmas are in flight, then
// waits for the older one (wait<1>), so the barrier never stalls the tensor cores. The k loop is unrolled over one turn
// of the ring (an even kStages), so every shared-memory offset and descriptor in it is a constant. K is split across
// blocks when the tiles cannot fill the GPU (w4a16_wgmma_plan), at most 8 ways: the blocks of one tile form a
// thread-block cluster and add their partial sums through distributed shared memory in rank order, so the result does
// not depend on which block finishes first.
#include <cooperative_groups.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <string>

#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/device_info.h"
#include "kernels/cuda/w4a16_fragments.cuh"
#include "kernels/cuda/w4a16_gemm.h"
#include "kernels/cuda/w4a16_pipeline.cuh"
#include "kernels/cuda/wgmma.cuh"

namespace crosspoint::cuda {
namespace {

using w4a16_internal::cp_async_16;
using w4a16_internal::cp_async_commit;
using w4a16_internal::cp_async_wait;
using w4a16_internal::dequant_word;
using w4a16_internal::dequant_word_zero;
using wgmma_internal::cp_async_16_or_zero;
using wgmma_internal::fence_proxy_async_shared;
using wgmma_internal::keep_registers_until_here;
using wgmma_internal::pin_register;
using wgmma_internal::sw128_kmajor_desc;
using wgmma_internal::wgmma_commit;
using wgmma_internal::wgmma_fence;
using wgmma_internal::wgmma_m64k16_rs;
using wgmma_internal::wgmma_wait;

constexpr int kChunkK = 64;  // input rows per packed chunk (4 k16 steps)
// K splits per tile at most: a cluster of 8 is the portable maximum.
constexpr int kMaxClusterSplits = 8;
// Block shape: kWarpGroups warpgroups side by side along N, 64 output channels each.
template <int kWarpGroups>
struct WgmmaBlock {
  static constexpr int kThreads = kWarpGroups * 128;
  static constexpr int kNBlocks = kWarpGroups * 4;  // n16 blocks per block: one per warp
};
// K stays below this: the kernel's scale-group index kc / chunks_per_group is computed in
// float, exact while the chunk index kc < 2^21.
constexpr int kMaxK = kChunkK << 21;        // 2^27
constexpr int kTileRowBytes = kChunkK * 2;  // one token's 64 fp16 of a chunk: 128 bytes

// Shared memory of one block, in this order (the activation tiles first: each must start on
// a 1024-byte boundary, which kTokens * 128 bytes keeps for every stage):
//   x_tiles  [kStages][kTokens][64] fp16, 128-byte swizzled rows (wgmma.cuh)
//   weights  [kStages][kBlockNBlocks][32 lanes] uint4 packed int4 words
//   scales   [kStages][kBlockNBlocks][8] half2 (s[c], s[c+8]) of the chunk's group
//   extra    [slots][kStages][kBlockNBlocks][8], laid out as the scales, in this order where they
//            exist: the zero points (kZeros: half2 (1024 + z[c], 1024 + z[c+8])), and with groups
//            of 32 rows (kHalfGroups) the chunk's second group's scales and zero points
template <bool kZeros, bool kHalfGroups>
struct WgmmaSlots {
  static constexpr int kCount = (kZeros ? 1 : 0) + (kHalfGroups ? 1 : 0) + (kZeros && kHalfGroups ? 1 : 0);
  static constexpr int kZero = 0;
  static constexpr int kScale2 = kZeros ? 1 : 0;
  static constexpr int kZero2 = 2;
};
template <int kTokens, int kStages, int kWarpGroups, bool kZeros = false, bool kHalfGroups = false>
struct WgmmaSmem {
  static_assert(kStages >= 3, "the ring keeps the chunk being multiplied and the one before it busy");
  static constexpr int kBlockNBlocks = WgmmaBlock<kWarpGroups>::kNBlocks;
  static constexpr int kTileBytes = kTokens * kTileRowBytes;
  static constexpr int kWeightBytes = kBlockNBlocks * 32 * 16;
  static constexpr int kScaleBytes = kBlockNBlocks * 8 * 4;
  static constexpr int kWeightOffset = kStages * kTileBytes;
  static constexpr int kScaleOffset = kWeightOffset + kStages * kWeightBytes;
  static constexpr int kExtraOffset = kScaleOffset + kStages * kScaleBytes;
  static constexpr int kSlotBytes = kStages * kScaleBytes;  // one extra slot, all stages
  static constexpr int kBytes =
      kExtraOffset + WgmmaSlots<kZeros, kHalfGroups>::kCount * kSlotBytes + 1024;  // + slack to align the base
  // A split-K block parks its fp32 D fragments in the ring once it is done with it.
  static_assert(kTokens / 2 * WgmmaBlock<kWarpGroups>::kThreads * 4 <= kBytes - 1024, "split-K sums fit in the ring");
};

// Where the blocks of one launch work: tiles first_tile .. (64 kWarpGroups channels x kTokens tokens each,
// m fastest: the token tiles of one channel tile run side by side and read its weights from
// DRAM once between them), `splits` consecutive blocks per tile, each a slice of K. With splits > 1 the
// launch has clusters of `splits` blocks, one per tile, whose partial sums meet in distributed
// shared memory.
struct WgmmaWork {
  int grid_m;  // tiles along M
  int first_tile;
  int splits;  // blocks (and cluster size) per tile: 1 .. kMaxClusterSplits
};

// grid = tiles x splits blocks (WgmmaWork), clusters of `splits`; block = 128 kWarpGroups threads. N is a
// multiple of 64, so each warpgroup's 64 channels are all in range or all beyond N (then it
// only helps copy). Token rows at or beyond M are zero-filled in shared memory and their D
// columns never stored (a D column depends only on its own B column).
template <int kTokens, int kStages, int kWarpGroups, int kMinBlocksPerSm, bool kZeros, bool kHalfGroups>
__global__ void __launch_bounds__(WgmmaBlock<kWarpGroups>::kThreads, kMinBlocksPerSm)
    w4a16_gemm_wgmma_kernel(const uint16_t* __restrict__ x, int64_t x_stride, const uint4* __restrict__ packed_weight,
                            const uint32_t* __restrict__ packed_scales, const uint32_t* __restrict__ packed_zeros,
                            uint16_t* __restrict__ y, int64_t y_stride, int m, int n, int k, int group_size,
                            WgmmaWork work) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using Smem = WgmmaSmem<kTokens, kStages, kWarpGroups, kZeros, kHalfGroups>;
  using Slots = WgmmaSlots<kZeros, kHalfGroups>;
  constexpr int kThreads = WgmmaBlock<kWarpGroups>::kThreads;
  constexpr int kBlockNBlocks = WgmmaBlock<kWarpGroups>::kNBlocks;
  static_assert(kBlockNBlocks * 32 == kThreads, "one 16-byte weight copy per thread and chunk");
  extern __shared__ unsigned char smem_raw[];
  const uint32_t raw_addr = static_cast<uint32_t>(__cvta_generic_to_shared(smem_raw));
  const uint32_t align_pad = (1024 - (raw_addr & 1023)) & 1023;
  unsigned char* smem = smem_raw + align_pad;
  const uint32_t x_tiles_addr = raw_addr + align_pad;  // shared address of x_tiles[0], 1024-byte aligned
  uint4* weights = reinterpret_cast<uint4*>(smem + Smem::kWeightOffset);
  uint32_t* scales = reinterpret_cast<uint32_t*>(smem + Smem::kScaleOffset);
  // Extra slot e of stage st, n16 block b: extra[(e * kStages + st) * kBlockNBlocks * 8 + b * 8 + c].
  uint32_t* extra = reinterpret_cast<uint32_t*>(smem + Smem::kExtraOffset);

  const int tid = threadIdx.x;
  const int lane = tid % 32;
  const int warp = tid / 32;        // = n16 block of the block this warp multiplies
  const int warp_group = warp / 4;  // 64-channel half of the block
  const int num_n_blocks = n / 16;
  const int num_k_chunks = k / kChunkK;
  const int splits = work.splits;
  const int tile = work.first_tile + static_cast<int>(blockIdx.x) / splits;
  const int split = static_cast<int>(blockIdx.x) % splits;  // = the block's rank in its cluster
  const int nb0 = (tile / work.grid_m) * kBlockNBlocks;
  const int m0 = (tile % work.grid_m) * kTokens;
  const int rows = min(kTokens, m - m0);                          // valid token rows of this tile
  const bool group_active = nb0 + 4 * warp_group < num_n_blocks;  // warpgroup-uniform
  const int kc_begin = static_cast<int>(static_cast<int64_t>(num_k_chunks) * split / splits);
  const int kc_end = static_cast<int>(static_cast<int64_t>(num_k_chunks) * (split + 1) / splits);
  const int num_chunks = kc_end - kc_begin;
  // group_size: a multiple of 64, or K itself; or 32 (kHalfGroups: groups 2 kc and 2 kc + 1)
  const int chunks_per_group = kHalfGroups ? 1 : group_size / kChunkK;
  const float inv_chunks_per_group = kHalfGroups ? 0.f : 1.0f / static_cast<float>(chunks_per_group);

  // Per-thread copy sources, fixed for the k loop. Weights: one 16-byte piece per thread,
  // (n16 block tid / 32, lane); n16 blocks beyond N copy the last valid block (never used).
  const uint4* weight_src =
      packed_weight + static_cast<int64_t>(min(nb0 + warp, num_n_blocks - 1)) * num_k_chunks * 32 + lane;
  // Scales: threads 0 .. 2 kBlockNBlocks - 1, half (tid % 2) of n16 block tid / 2.
  const bool copies_scales = tid < kBlockNBlocks * 2;
  const uint32_t* scale_src =
      packed_scales + static_cast<int64_t>(min(nb0 + (tid / 2) % kBlockNBlocks, num_n_blocks - 1)) * 8 + (tid % 2) * 4;
  // Extra slots: slot e is copied by the next 2 kBlockNBlocks threads after slot e - 1's, the same way.
  static_assert(kBlockNBlocks * 2 * (1 + Slots::kCount) <= kThreads, "one 16-byte group copy per thread");
  const int slot = tid / (kBlockNBlocks * 2) - 1;  // -1: the scales' threads (or none)
  const bool copies_extra = Slots::kCount > 0 && slot >= 0 && slot < Slots::kCount;
  const int et = tid % (kBlockNBlocks * 2);
  const bool extra_is_zero = kZeros && (slot == Slots::kZero || (kHalfGroups && slot == Slots::kZero2));
  const int extra_group_offset = kHalfGroups && slot >= Slots::kScale2 ? 1 : 0;  // the chunk's second group
  const uint32_t* extra_src =
      copies_extra ? (extra_is_zero ? packed_zeros : packed_scales) +
                         static_cast<int64_t>(min(nb0 + (et / 2) % kBlockNBlocks, num_n_blocks - 1)) * 8 + (et % 2) * 4
                   : nullptr;
  // Activations: 16-byte chunk c = tid % 8 of rows tid / 8 + kRowsPerPass p (pass p); the 128-byte swizzle
  // stores chunk c of row r at chunk c ^ (r % 8), and r % 8 is the same in every pass.
  constexpr int kRowsPerPass = kThreads / 8;
  constexpr int kPasses = (kTokens + kRowsPerPass - 1) / kRowsPerPass;
  const int a_row = tid / 8, a_chunk = tid % 8;
  const uint32_t a_dst_offset = a_row * kTileRowBytes + ((a_chunk ^ (a_row % 8)) * 16);
  // Activation copies: element offset in x of this thread's pass-0 row and 16-byte piece, and
  // from one pass's row to the next (only used for rows < M, so never past x's end).
  const int64_t x_row_offset = static_cast<int64_t>(m0 + a_row) * x_stride + a_chunk * 8;
  const int64_t x_pass_stride = static_cast<int64_t>(kRowsPerPass) * x_stride;

  // Issues the cp.async copies of chunk kc into stage st (all threads take part).
  auto load_stage = [&](int st, int kc) {
    cp_async_16(&weights[st * kBlockNBlocks * 32 + tid], weight_src + static_cast<int64_t>(kc) * 32);
    if (copies_scales || copies_extra) {
      // kc / chunks_per_group without the ~30-instruction integer division. Exact:
      // (kc + 0.5) / chunks_per_group is at least 0.5 / chunks_per_group from an integer, far
      // more than the float error (kc < 2^21 for any K below 2^27).
      const int group = kHalfGroups ? 2 * kc : static_cast<int>((static_cast<float>(kc) + 0.5f) * inv_chunks_per_group);
      if (copies_scales) {
        cp_async_16(&scales[st * kBlockNBlocks * 8 + tid * 4],
                    scale_src + static_cast<int64_t>(group) * num_n_blocks * 8);
      } else if constexpr (Slots::kCount > 0) {
        cp_async_16(&extra[(slot * kStages + st) * kBlockNBlocks * 8 + et * 4],
                    extra_src + static_cast<int64_t>(group + extra_group_offset) * num_n_blocks * 8);
      }
    }
    unsigned char* tile = smem + st * Smem::kTileBytes;
    // Few integer instructions per chunk: the row offsets come from x_row_offset and
    // x_pass_stride (fixed for the k loop), and the row < kTokens test goes when the passes
    // cover the tile exactly (a_row < kRowsPerPass).
#pragma unroll
    for (int p = 0; p < kPasses; ++p) {
      const int row = a_row + p * kRowsPerPass;
      if (kTokens % kRowsPerPass == 0 || row < kTokens) {
        const bool valid = row < rows;
        const uint16_t* src = valid ? x + (x_row_offset + p * x_pass_stride + kc * kChunkK) : x;
        cp_async_16_or_zero(tile + a_dst_offset + p * kRowsPerPass * kTileRowBytes, src, valid);
      }
    }
  };

  float acc[kTokens / 2];  // D fragment (wgmma.cuh): [n8 token tile i][r] at 4 i + r
#pragma unroll
  for (int i = 0; i < kTokens / 2; ++i) acc[i] = 0.f;
  uint32_t a_even[4][4], a_odd[4][4];  // A fragments [k16 step][register] of even / odd chunks

  // Group values of the chunk: its scale and zero pair, and (kHalfGroups) those of its second group.
  struct ChunkGroups {
    uint32_t scale = 0, zero = 0, scale2 = 0, zero2 = 0;
  };
  // Dequantises one chunk's packed words (this warp's n16 block x 64 k) into its 4 k16 A fragments.
  auto dequant_chunk = [&](const uint4& word, const ChunkGroups& g, uint32_t(&a)[4][4]) {
    const uint32_t words[4] = {word.x, word.y, word.z, word.w};
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const bool second = kHalfGroups && j >= 2;  // k16 steps 2, 3 of a chunk in groups of 32
      const uint32_t scale_bits = second ? g.scale2 : g.scale;
      const uint32_t zero_bits = second ? g.zero2 : g.zero;
      const half2 scale_pair = *reinterpret_cast<const half2*>(&scale_bits);
      const half2 scale_lo = __low2half2(scale_pair);   // s[channel g]
      const half2 scale_hi = __high2half2(scale_pair);  // s[channel g + 8]
      // dequant_word: f[0] = (c, k0..+1), f[1] = (c, k0+8..+9), f[2] = (c+8, k0..+1), f[3] = (c+8, k0+8..+9),
      // with c = channel g (the A row) and k0 = 2t: A registers are f[0], f[2], f[1], f[3] (wgmma.cuh).
      half2 f[4];
      if constexpr (kZeros) {
        dequant_word_zero(words[j], zero_bits, f);
      } else {
        dequant_word(words[j], f);
      }
      const half2 r0 = __hmul2(f[0], scale_lo), r1 = __hmul2(f[2], scale_hi);
      const half2 r2 = __hmul2(f[1], scale_lo), r3 = __hmul2(f[3], scale_hi);
      a[j][0] = *reinterpret_cast<const uint32_t*>(&r0);
      a[j][1] = *reinterpret_cast<const uint32_t*>(&r1);
      a[j][2] = *reinterpret_cast<const uint32_t*>(&r2);
      a[j][3] = *reinterpret_cast<const uint32_t*>(&r3);
    }
  };
  // Issues the 4 k16 wgmmas of the chunk in ring slot st as one committed group.
  auto issue_chunk = [&](int st, uint32_t(&a)[4][4]) {
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
      for (int r = 0; r < 4; ++r) pin_register(a[j][r]);
    wgmma_fence();
    const uint64_t desc = sw128_kmajor_desc(x_tiles_addr + st * Smem::kTileBytes);
#pragma unroll
    for (int j = 0; j < 4; ++j) wgmma_m64k16_rs<kTokens>(acc, a[j], desc + 2 * j);  // k16 step j: +32 bytes
    wgmma_commit();
  };

#pragma unroll
  for (int s = 0; s < kStages - 2; ++s) {
    if (s < num_chunks) load_stage(s, kc_begin + s);
    cp_async_commit();
  }
#pragma unroll
  for (int i = 0; i < kTokens / 2; ++i) pin_register(acc[i]);
  static_assert(kStages >= 4, "chunks i - 2 .. i + 1 hold four ring slots at the barrier of step i");
  // Step i: read and dequantise chunk i (its copies landed and the barrier passed in step
  // i - 1), issue its wgmmas, and only then wait for chunk i + 1's copies, pass the barrier and
  // refill the ring, all while chunks i - 1 and i are both in flight; wait<1> (chunk i - 1
  // done) comes last, just before step i + 1's dequantisation overwrites chunk i - 1's A
  // registers. Ring: chunk i + kStages - 2 goes into chunk i - 2's slot, free after the barrier
  // of step i because every warpgroup passed its wait<1> of step i - 1 before it. cp.async groups: kStages - 2 from the
  // prologue plus one per step, so chunk i + 1 has landed when at most kStages - 4 are pending.
  // The wgmmas read their A registers until they complete, but the assembler sees them dead
  // once the wgmma is issued: a real (never executed) use of chunk i - 1's registers after the
  // wait<1> that completes them keeps it from handing them to chunk i + 1's dequantisation.
  const uint32_t never = m < 0 ? 1u : 0u;  // always 0 (m >= 1 here), unknown to the compiler
  auto keep_fragments = [&](uint32_t(&a)[4][4]) {
#pragma unroll
    for (int j = 0; j < 4; ++j) keep_registers_until_here(a[j], never, x_tiles_addr);
  };
  // Step i of the k loop in ring slot st = i % kStages, with the A registers a (and a_prev, those
  // of step i - 1).
  auto step = [&](int i, int st, uint32_t(&a)[4][4], uint32_t(&a_prev)[4][4]) {
    // The warpgroup's channels exist: group_active, recomputed from special registers and
    // kernel parameters; held across the k loop it cost a spill at 128 tokens (every
    // register counts there).
    if (nb0 + 4 * (threadIdx.x / 128) < n / 16) {
      const uint4 word = weights[st * kBlockNBlocks * 32 + warp * 32 + lane];
      const int group_index = st * kBlockNBlocks * 8 + warp * 8 + lane / 4;
      ChunkGroups g;
      g.scale = scales[group_index];
      if constexpr (kZeros) g.zero = extra[Slots::kZero * kStages * kBlockNBlocks * 8 + group_index];
      if constexpr (kHalfGroups) {
        g.scale2 = extra[Slots::kScale2 * kStages * kBlockNBlocks * 8 + group_index];
        if constexpr (kZeros) g.zero2 = extra[Slots::kZero2 * kStages * kBlockNBlocks * 8 + group_index];
      }
      dequant_chunk(word, g, a);
      issue_chunk(st, a);
    }
    if (i + 1 < num_chunks) {  // block-uniform
      cp_async_wait<kStages - 4>();
      fence_proxy_async_shared();
      __syncthreads();
      if (i + kStages - 2 < num_chunks) load_stage((st + kStages - 2) % kStages, kc_begin + i + kStages - 2);
      cp_async_commit();
    }
    wgmma_wait<1>();
    keep_fragments(a_prev);
  };
  cp_async_wait<kStages - 3>();  // chunk 0 has landed
  fence_proxy_async_shared();
  __syncthreads();
  if constexpr (kStages % 2 == 0) {
    // One turn of the ring per iteration: slot u is a constant, and so is which A registers.
    for (int i0 = 0; i0 < num_chunks; i0 += kStages) {
#pragma unroll
      for (int u = 0; u < kStages; ++u) {
        if (i0 + u >= num_chunks) break;
        if (u % 2 == 0) {
          step(i0 + u, u, a_even, a_odd);
        } else {
          step(i0 + u, u, a_odd, a_even);
        }
      }
    }
  } else {
    for (int i = 0; i < num_chunks; i += 2) {
      step(i, i % kStages, a_even, a_odd);
      if (i + 1 < num_chunks) step(i + 1, (i + 1) % kStages, a_odd, a_even);
    }
  }
  wgmma_wait<0>();
  keep_fragments(a_even);
  keep_fragments(a_odd);
#pragma unroll
  for (int i = 0; i < kTokens / 2; ++i) pin_register(acc[i]);
  cp_async_wait<0>();

  // D element (channel, token) of this thread: channel (nb0 + warp) * 16 + g (+8 for r >= 2),
  // token m0 + 8 i + 2 t + (r & 1).
  const bool y_pairs_aligned = y_stride % 2 == 0 && reinterpret_cast<uintptr_t>(y) % 4 == 0;  // half2 stores allowed
  if (splits == 1) {
    // Lanes g and g ^ 1 (lane ^ 4) swap one value so that each holds two adjacent channels of
    // one token: the even-g lane (channels g, g + 1) of token 2 t, the odd-g lane (channels
    // g - 1, g) of token 2 t + 1; one half2 store each.
    if (group_active) {
      const int odd = (lane / 4) & 1;
      const int pair_channel0 = (nb0 + warp) * 16 + lane / 4 - odd;  // even: first channel of the pair
      const int pair_token0 = 2 * (lane % 4) + odd;
#pragma unroll
      for (int i = 0; i < kTokens / 8; ++i) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {                                        // channel half: g, or g + 8
          const float v0 = acc[4 * i + 2 * h], v1 = acc[4 * i + 2 * h + 1];  // tokens 2 t and 2 t + 1
          const float other = __shfl_xor_sync(0xFFFFFFFFu, odd ? v0 : v1, 4);
          const float lo = odd ? other : v0, hi = odd ? v1 : other;  // channels pair_channel, + 1
          const int token = 8 * i + pair_token0;
          if (token >= rows) continue;
          uint16_t* dst = y + (m0 + token) * y_stride + pair_channel0 + 8 * h;
          if (y_pairs_aligned) {
            *reinterpret_cast<half2*>(dst) = __floats2half2_rn(lo, hi);
          } else {
            dst[0] = __half_as_ushort(__float2half_rn(lo));
            dst[1] = __half_as_ushort(__float2half_rn(hi));
          }
        }
      }
    }
    return;
  }

  // Split K: the cluster's blocks (one per slice) park their fp32 D fragments in their own
  // shared memory, the ring being done with, as sums[i][tid]; after the cluster barrier, block
  // `split` adds up its share of the tile's elements over every block of the cluster, reading
  // their shared memory (in rank order: deterministic), and writes fp16; a second barrier keeps
  // each block's shared memory alive until the others have read it. No workspace, no atomics.
  __syncthreads();  // every warpgroup's wgmmas (which read the ring) are done
  float* sums = reinterpret_cast<float*>(smem);
#pragma unroll
  for (int i = 0; i < kTokens / 2; ++i) sums[i * kThreads + tid] = acc[i];
  cooperative_groups::cluster_group cluster = cooperative_groups::this_cluster();
  cluster.sync();
  constexpr int kElements = kThreads * (kTokens / 2);
  const int begin = static_cast<int>(static_cast<int64_t>(kElements) * split / splits);
  const int end = static_cast<int>(static_cast<int64_t>(kElements) * (split + 1) / splits);
  for (int e = begin + tid; e < end; e += kThreads) {
    // Element e = (fragment index i, thread t) of the tile: warp t / 32, lane t % 32.
    const int i = e / kThreads, t = e % kThreads;
    const int src_warp = t / 32, src_lane = t % 32;
    const int channel = (nb0 + src_warp) * 16 + src_lane / 4 + ((i % 4) >= 2 ? 8 : 0);
    const int token = 8 * (i / 4) + 2 * (src_lane % 4) + (i % 2);
    if (channel >= n || token >= rows) continue;
    float total = 0.f;
    for (int q = 0; q < splits; ++q) total += cluster.map_shared_rank(sums, q)[e];
    y[(m0 + token) * y_stride + channel] = __half_as_ushort(__float2half_rn(total));
  }
  cluster.sync();
#else
  __trap();  // built without sm_90a; the host refuses devices other than compute capability 9.0
#endif
}

// A launch of `blocks` blocks of `threads` in clusters of `cluster` consecutive blocks (no
// cluster attribute for 1); `attribute` must outlive the launch.
cudaLaunchConfig_t cluster_launch_config(unsigned blocks, int threads, int cluster, size_t shared_bytes,
                                         cudaStream_t stream, cudaLaunchAttribute& attribute) {
  attribute.id = cudaLaunchAttributeClusterDimension;
  attribute.val.clusterDim.x = static_cast<unsigned>(cluster);
  attribute.val.clusterDim.y = 1;
  attribute.val.clusterDim.z = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(blocks);
  config.blockDim = dim3(threads);
  config.dynamicSmemBytes = shared_bytes;
  config.stream = stream;
  config.attrs = &attribute;
  config.numAttrs = cluster > 1 ? 1 : 0;
  return config;
}

template <int kTokens, int kStages, int kWarpGroups, int kMinBlocksPerSm, bool kZeros, bool kHalfGroups>
Status launch_wgmma(const uint16_t* x, int64_t x_stride, const uint32_t* packed_weight, const uint32_t* packed_scales,
                    const uint32_t* packed_zeros, uint16_t* y, int64_t y_stride, int m, int n, int k, int group_size,
                    const W4A16WgmmaOptions& options, cudaStream_t stream) {
  constexpr auto kKernel = w4a16_gemm_wgmma_kernel<kTokens, kStages, kWarpGroups, kMinBlocksPerSm, kZeros, kHalfGroups>;
  constexpr int kSmemBytes = WgmmaSmem<kTokens, kStages, kWarpGroups, kZeros, kHalfGroups>::kBytes;
  constexpr int kThreads = WgmmaBlock<kWarpGroups>::kThreads;
  static const int blocks_per_sm = resident_blocks_per_sm(kKernel, kThreads, kSmemBytes);  // once per instantiation
  if (blocks_per_sm <= 0) {
    return internal_error("w4a16_gemm_wgmma: kernel with " + std::to_string(kSmemBytes) +
                          " bytes of shared memory cannot be resident on this device");
  }
  // Tiles resident at once per split count: clusters of s blocks (one tile each) as the runtime
  // packs them into the GPU's processing clusters. Queried once per instantiation.
  static const std::array<int, kMaxClusterSplits + 1> cluster_tiles_per_wave = [&] {
    std::array<int, kMaxClusterSplits + 1> tiles{};
    const int slots = cuda_device_info().num_sms * blocks_per_sm;
    tiles[0] = tiles[1] = slots;
    for (int s = 2; s <= kMaxClusterSplits; ++s) {
      cudaLaunchAttribute cluster_dim;
      const cudaLaunchConfig_t config =
          cluster_launch_config(static_cast<unsigned>(s) * 64, kThreads, s, kSmemBytes, nullptr, cluster_dim);
      int clusters = 0;
      if (cudaOccupancyMaxActiveClusters(&clusters, kKernel, &config) != cudaSuccess || clusters <= 0) {
        cudaGetLastError();
        clusters = slots / s;  // the estimate without the query
      }
      tiles[s] = clusters;
    }
    return tiles;
  }();
  W4A16WgmmaPlan plan = w4a16_wgmma_plan(m, n, k, cuda_device_info().num_sms, blocks_per_sm, options.split_cost_chunks,
                                         cluster_tiles_per_wave.data(), kWarpGroups);
  const int tiles = plan.grid_n * plan.grid_m;
  const int max_splits = std::min(kMaxClusterSplits, k / kChunkK);
  if (options.k_splits > 0) {  // forced: every tile split alike, or (tail_splits > 0) the last tail_tiles otherwise
    plan.k_splits = std::min(options.k_splits, max_splits);
    plan.full_tiles = tiles - std::clamp(options.tail_tiles, 0, tiles);
    plan.tail_splits = options.tail_splits > 0 ? std::min(options.tail_splits, max_splits) : plan.k_splits;
  }
  // One launch per split count: the full tiles, then the tail (clusters have one size per launch).
  auto launch_tiles = [&](int first_tile, int num_tiles, int splits) -> Status {
    if (num_tiles <= 0) return Status::ok();
    cudaLaunchAttribute cluster_dim;
    const cudaLaunchConfig_t config = cluster_launch_config(static_cast<unsigned>(num_tiles * splits), kThreads, splits,
                                                            kSmemBytes, stream, cluster_dim);
    const WgmmaWork work{plan.grid_m, first_tile, splits};
    CROSSPOINT_CUDA_RETURN_IF_ERROR(
        cudaLaunchKernelEx(&config, kKernel, x, x_stride, reinterpret_cast<const uint4*>(packed_weight), packed_scales,
                           packed_zeros, y, y_stride, m, n, k, group_size, work),
        "w4a16_gemm_wgmma launch");
    return Status::ok();
  };
  CROSSPOINT_RETURN_IF_ERROR(launch_tiles(0, plan.full_tiles, plan.k_splits));
  CROSSPOINT_RETURN_IF_ERROR(launch_tiles(plan.full_tiles, tiles - plan.full_tiles, plan.tail_splits));
  return Status::ok();
}

}  // namespace

int w4a16_wgmma_token_tile(int m, int warp_groups) {
  if (warp_groups == kW4A16WgmmaWideWarpGroups) return 128;
  return m <= 16 ? 16 : m <= 32 ? 32 : 64;
}

int w4a16_wgmma_warp_groups_for(int m) { return m > kW4A16WgmmaWideMinRows ? kW4A16WgmmaWideWarpGroups : 2; }

W4A16WgmmaPlan w4a16_wgmma_plan(int m, int n, int k, int num_sms, int blocks_per_sm, double split_cost_chunks,
                                const int* cluster_tiles_per_wave, int warp_groups) {
  W4A16WgmmaPlan plan;
  plan.token_tile = w4a16_wgmma_token_tile(m, warp_groups);
  plan.block_cols = 64 * warp_groups;
  plan.grid_n = (n + plan.block_cols - 1) / plan.block_cols;
  plan.grid_m = (m + plan.token_tile - 1) / plan.token_tile;
  const int64_t tiles = static_cast<int64_t>(plan.grid_n) * plan.grid_m;
  const int num_k_chunks = k / kChunkK;
  plan.k_splits = w4a16_internal::plan_k_splits(tiles, num_k_chunks, num_sms, blocks_per_sm, split_cost_chunks,
                                                kMaxClusterSplits, cluster_tiles_per_wave);
  plan.full_tiles = static_cast<int>(tiles);
  plan.tail_splits = plan.k_splits;
  // Whole tiles that fill some waves and leave a last, partial one (the 7B gate_up at M = 128:
  // 296 tiles on 264 slots, the last wave 12 % full): split only those last tiles, as many ways
  // as their clusters can all be resident, so they take a fraction of a tile's time. Estimated
  // as plan_k_splits does (chunk-times of one block, split_cost_chunks per split block).
  const int64_t slots = static_cast<int64_t>(std::max(1, num_sms)) * std::max(1, blocks_per_sm);
  const int64_t tail = tiles % slots;
  if (plan.k_splits == 1 && tiles > slots && tail > 0) {
    // The most splits (clusters) whose tail tiles are all resident at once.
    int tail_splits = std::min(num_k_chunks / 4, kMaxClusterSplits);
    auto resident_tiles = [&](int s) {
      return cluster_tiles_per_wave != nullptr ? static_cast<int64_t>(cluster_tiles_per_wave[s]) : slots / s;
    };
    while (tail_splits >= 2 && resident_tiles(tail_splits) < tail) --tail_splits;
    const double whole_waves = static_cast<double>(tiles / slots);
    const double uniform_cost = (whole_waves + 1) * num_k_chunks;
    const double tail_cost =
        whole_waves * num_k_chunks + (num_k_chunks + tail_splits - 1) / tail_splits + split_cost_chunks;
    if (tail_splits >= 2 && tail_cost < uniform_cost) {
      plan.full_tiles = static_cast<int>(tiles - tail);
      plan.tail_splits = tail_splits;
    }
  }
  return plan;
}

bool w4a16_wgmma_supported() {
  const CudaDeviceInfo& d = cuda_device_info();
  return d.major == 9 && d.minor == 0;
}

namespace {

// Stages and blocks per SM as measured best on the H200: a deeper ring at two blocks per SM
// rather than a shallower one at three; the wide blocks fill one SM each with the deepest ring
// that fits (an even depth, so the k loop is unrolled over it).
template <bool kZeros, bool kHalfGroups>
Status launch_for_tile(int warp_groups, const uint16_t* x, int64_t x_stride, const uint32_t* packed_weight,
                       const uint32_t* packed_scales, const uint32_t* packed_zeros, uint16_t* y, int64_t y_stride,
                       int m, int n, int k, int group_size, const W4A16WgmmaOptions& options, cudaStream_t stream) {
  if (warp_groups == kW4A16WgmmaWideWarpGroups) {
    return launch_wgmma<128, 8, kW4A16WgmmaWideWarpGroups, 1, kZeros, kHalfGroups>(
        x, x_stride, packed_weight, packed_scales, packed_zeros, y, y_stride, m, n, k, group_size, options, stream);
  }
  switch (w4a16_wgmma_token_tile(m, 2)) {
    case 16:
      return launch_wgmma<16, 12, 2, 2, kZeros, kHalfGroups>(x, x_stride, packed_weight, packed_scales, packed_zeros, y,
                                                             y_stride, m, n, k, group_size, options, stream);
    case 32:
      return launch_wgmma<32, 12, 2, 2, kZeros, kHalfGroups>(x, x_stride, packed_weight, packed_scales, packed_zeros, y,
                                                             y_stride, m, n, k, group_size, options, stream);
    default:
      return launch_wgmma<64, 8, 2, 2, kZeros, kHalfGroups>(x, x_stride, packed_weight, packed_scales, packed_zeros, y,
                                                            y_stride, m, n, k, group_size, options, stream);
  }
}

}  // namespace

Status w4a16_gemm_wgmma(const uint16_t* x, int64_t x_stride, const uint32_t* packed_weight,
                        const uint32_t* packed_scales, uint16_t* y, int64_t y_stride, int m, int n, int k,
                        int group_size, const W4A16WgmmaOptions& options, cudaStream_t stream,
                        const uint32_t* packed_zeros) {
  if (n % 64 != 0) {
    return unsupported("w4a16_gemm_wgmma: n = " + std::to_string(n) +
                       " is not a multiple of 64 (one warpgroup's channels)");
  }
  if (k >= kMaxK) {
    return unsupported("w4a16_gemm_wgmma: k = " + std::to_string(k) + " is beyond the kernel's limit of " +
                       std::to_string(kMaxK - 1) + " (float scale-group index)");
  }
  if (!w4a16_wgmma_supported()) {
    const CudaDeviceInfo& d = cuda_device_info();
    return unsupported("w4a16_gemm_wgmma: wgmma needs a compute capability 9.0 GPU (sm_90a); this device is " +
                       std::to_string(d.major) + "." + std::to_string(d.minor));
  }
  if (m <= 0) return Status::ok();
  const int warp_groups = options.warp_groups > 0 ? options.warp_groups : w4a16_wgmma_warp_groups_for(m);
  if (warp_groups != 2 && warp_groups != kW4A16WgmmaWideWarpGroups) {
    return invalid_argument("w4a16_gemm_wgmma: warp_groups = " + std::to_string(warp_groups) + " (2 or " +
                            std::to_string(kW4A16WgmmaWideWarpGroups) + ")");
  }
  const bool zeros = packed_zeros != nullptr, half_groups = group_size == 32;
  if (zeros && half_groups)
    return launch_for_tile<true, true>(warp_groups, x, x_stride, packed_weight, packed_scales, packed_zeros, y,
                                       y_stride, m, n, k, group_size, options, stream);
  if (zeros)
    return launch_for_tile<true, false>(warp_groups, x, x_stride, packed_weight, packed_scales, packed_zeros, y,
                                        y_stride, m, n, k, group_size, options, stream);
  if (half_groups)
    return launch_for_tile<false, true>(warp_groups, x, x_stride, packed_weight, packed_scales, nullptr, y, y_stride, m,
                                        n, k, group_size, options, stream);
  return launch_for_tile<false, false>(warp_groups, x, x_stride, packed_weight, packed_scales, nullptr, y, y_stride, m,
                                       n, k, group_size, options, stream);
}

}  // namespace crosspoint::cuda
