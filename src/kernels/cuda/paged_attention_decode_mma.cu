// Decode attention over the paged cache on tensor cores (FlashDecoding style, GQA-aware), for
// every row the tensor-core prefill kernel does not take (params' tensor_core_min_rows):
// decodes, and the rows of short chunks (each row attends to its own causal prefix).
//
//   Work unit: a range [begin, end) of one (query row t, KV head) pair; 4 warps. The G query
//   heads of the KV head's group (G = H / Hkv <= 16) are the rows of one m16 mma tile (rows
//   G..15 are zero), so each K/V byte is read once per (row, KV head) and all math runs on
//   tensor cores:
//     S = Q K^T    mma.sync m16n8k16, Q as A fragments kept in registers, K as B fragments
//                  read with ldmatrix (K rows are [position][dim]: the "col" B layout as is)
//     online softmax on the S accumulators in fp32 (log2 domain, running max m, sum l)
//     O = O * alpha + P V   P re-packed to fp16 as A, V via ldmatrix.trans as B
//   The range is walked in tiles of 64 positions gathered through the block table with
//   16-byte cp.async copies into a kStages-deep shared-memory ring (rows padded by 16 bytes:
//   the 8 rows an ldmatrix reads fall on distinct banks), so the next tiles' loads are in
//   flight while the current tile is computed. Warp w takes positions 16w..16w+15 of every
//   tile and keeps its own (m, l, O); the 4 warps are combined through shared memory at the
//   end. Positions past `end` are loaded from position `begin` instead (always a real cache
//   row, so finite) and masked to probability 0.
//
// Three kernels share that unit. The first two share the fused merge (partials normalised by
// their own l, then a ticket on a workspace counter with fences before and after, as
// w4a16_pipeline.cuh's split-K handshake; the last piece's CTA merges and resets the counter:
// counters are zero between launches; no second kernel):
//   decode_tensor_core_kernel (the partitioned form): CTA = (row, KV head, partition); the
//     partition length is set by the batch size and grid.z by the host's context bound
//     (partitions past a row's length exit at once). One partition per (row, KV head) in
//     batch-invariant mode (a row's reduction order never depends on the other rows).
//   decode_balanced_kernel (CudaAttentionKernels::kBalancedDecode): one wave of CTAs; the pairs'
//     tiles, laid end to end, are cut into equal ranges from the actual lengths (computed on the
//     device from the step's inputs, so a captured graph stays valid), whatever mix of short and
//     long rows the batch holds; pairs cut by range boundaries are merged.
// The third merges in distributed shared memory instead:
//   decode_cluster_kernel (small batches, sm_90+): a cluster of 8 CTAs per (row, KV head), each
//     taking an eighth of the row's tiles; the rows an earlier step wrote are copied before the
//     kernel waits for the previous one.
//
// Fragment layouts (PTX ISA, mma.m16n8k16 with .f16 inputs; lane = 4 * group + quad):
//   A (16 x 16, row major) a0: (row group, k 2 quad .. +1)  a1: (row group + 8, same k)
//                          a2: (row group, k 2 quad + 8 ..)  a3: (row group + 8, k 2 quad + 8 ..)
//   B (16 x 8)             b0: (k 2 quad .. +1, col group)   b1: (k 2 quad + 8 .., col group)
//   C (16 x 8, fp32)       c0, c1: (row group, cols 2 quad, +1)  c2, c3: (row group + 8, same cols)
//   Here rows are query heads of the group, S columns positions, O columns dims.
//
// An e4m3 cache (Params::kv_fp8) travels the ring as bytes (rows padded to D + 16 bytes); each
// warp widens its 16 positions of K and V into its own fp16 tile (exact) just before its
// ldmatrix reads, so the fragments and the math are the fp16 kernel's.
//
// Ring depth kStages: 3 (2 where the GPU refuses that much shared memory: D 128 takes
// 104,448 bytes with 3 stages, 2 CTAs per SM).
#include <cooperative_groups.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <climits>
#include <string>

#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/device_info.h"
#include "kernels/cuda/paged_attention_mma.cuh"
#include "kernels/cuda/paged_attention_params.cuh"
#include "kernels/cuda/programmatic_launch.cuh"
#include "kernels/cuda/w4a16_pipeline.cuh"

namespace crosspoint::cuda::attention_internal {
namespace {

using w4a16_internal::cp_async_16;
using w4a16_internal::cp_async_commit;
using w4a16_internal::cp_async_wait;
using w4a16_internal::last_split_block_of_tile;
using w4a16_internal::ldmatrix_x4;

constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;
constexpr int kTile = kWarps * 16;          // positions per pipeline stage, 16 per warp
constexpr int kPad = 8;                     // fp16 padding per shared-memory row (16 bytes)
constexpr int kPadFp8 = 16;                 // e4m3 padding per ring row (bytes), keeping rows 16-byte aligned
constexpr int kMaxGroup = kMaxDecodeGroup;  // query heads per KV head: the 16 rows of the mma tile
constexpr int kDecodeCluster = 8;           // CTAs per (row, KV head) in the cluster form: the portable size

// Bytes of one ring row of the cache (K or V): fp16 rows padded by kPad elements, e4m3 rows by
// kPadFp8 bytes.
template <int kHeadDim, bool kFp8>
__host__ __device__ constexpr int ring_row_bytes() {
  return kFp8 ? kHeadDim + kPadFp8 : (kHeadDim + kPad) * 2;
}
template <int kHeadDim, bool kFp8>
__host__ __device__ constexpr int stage_bytes() {
  return 2 * kTile * ring_row_bytes<kHeadDim, kFp8>();
}  // K then V
// The e4m3 kernel's per-warp fp16 tiles (16 positions of K, then of V), after the ring.
template <int kHeadDim, bool kFp8>
__host__ __device__ constexpr int widened_bytes() {
  return kFp8 ? kWarps * 2 * 16 * (kHeadDim + kPad) * 2 : 0;
}
template <int kHeadDim, int kStages, bool kFp8>
constexpr size_t shared_bytes() {
  return static_cast<size_t>(kStages) * stage_bytes<kHeadDim, kFp8>() + widened_bytes<kHeadDim, kFp8>();
}

// Four 8x8 fp16 matrices, transposed on the way: lanes 8j .. 8j+7 give the row addresses of
// matrix j, and lane i receives element [2 (i % 4) .. +1][i / 4] of each (a B fragment half
// when the matrix rows are k).
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], const uint16_t* row_address) {
  const uint32_t address = static_cast<uint32_t>(__cvta_generic_to_shared(row_address));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address));
}

// Issues the copies of positions tile0 .. tile0 + 63 of K and V into one stage
// ([position][dim], rows ring_row_bytes apart); positions at or past `end` copy `begin`. Only
// rows whose source position is in [lo, hi) are copied (the cluster form copies the rows an
// earlier step wrote before it waits for the previous kernel, the others after; kFiltered).
template <int kHeadDim, bool kFp8, bool kFiltered = false>
__device__ __forceinline__ void load_tile(const Params& p, const int32_t* table, int64_t kv_head_offset, int tile0,
                                          int begin, int end, uint8_t* stage, int lo = 0, int hi = INT_MAX) {
  constexpr int kElemBytes = kFp8 ? 1 : 2;
  constexpr int kVecPerRow = kHeadDim * kElemBytes / 16;
  constexpr int kRowsPerPass = kThreads / kVecPerRow;
  constexpr int kRowBytes = ring_row_bytes<kHeadDim, kFp8>();
  const int col = (threadIdx.x % kVecPerRow) * (16 / kElemBytes);  // in elements
  uint8_t* k_dst = stage + col * kElemBytes;
  uint8_t* v_dst = k_dst + kTile * kRowBytes;
  const char* key = static_cast<const char*>(p.key_cache);
  const char* value = static_cast<const char*>(p.value_cache);
  static_assert(kTile % kRowsPerPass == 0, "whole passes");
#pragma unroll
  for (int pass = 0; pass < kTile / kRowsPerPass; ++pass) {
    const int r = threadIdx.x / kVecPerRow + pass * kRowsPerPass;
    const int position = tile0 + r < end ? tile0 + r : begin;
    if (kFiltered && (position < lo || position >= hi)) continue;
    const int64_t offset = (cache_row_offset(p, table, position) + kv_head_offset + col) * kElemBytes;
    cp_async_16(k_dst + r * kRowBytes, key + offset);
    cp_async_16(v_dst + r * kRowBytes, value + offset);
  }
}

// One warp widens 16 e4m3 ring rows (kHeadDim + kPadFp8 bytes apart) into fp16 rows
// (kHeadDim + kPad elements apart).
template <int kHeadDim>
__device__ __forceinline__ void widen_warp_rows(const uint8_t* src, uint16_t* dst, int lane) {
  constexpr int kChunks = kHeadDim / 8;  // 8 elements each
#pragma unroll
  for (int c = lane; c < 16 * kChunks; c += 32) {
    const int r = c / kChunks, col = (c % kChunks) * 8;
    *reinterpret_cast<uint4*>(dst + r * (kHeadDim + kPad) + col) =
        load_cache8<true>(src, r * (kHeadDim + kPadFp8) + col);
  }
}

// The ring's prologue for positions [begin, end): the first kStages - 1 tiles' rows whose source
// position is in [lo, hi), committed as a group per stage (empty past the end) when `commit`.
template <int kHeadDim, int kStages, bool kFp8, bool kFiltered>
__device__ __forceinline__ void issue_prologue(const Params& p, const int32_t* table, int kv_head, int begin, int end,
                                               uint16_t* smem, int lo, int hi, bool commit) {
  constexpr int kStageBytes = stage_bytes<kHeadDim, kFp8>();
  uint8_t* ring = reinterpret_cast<uint8_t*>(smem);
  const int64_t kv_head_offset = static_cast<int64_t>(kv_head) * kHeadDim;
  const int num_tiles = (end - begin + kTile - 1) / kTile;
#pragma unroll
  for (int i = 0; i < kStages - 1; ++i) {
    if (i < num_tiles)
      load_tile<kHeadDim, kFp8, kFiltered>(p, table, kv_head_offset, begin + i * kTile, begin, end,
                                           ring + i * kStageBytes, lo, hi);
    if (commit) cp_async_commit();
  }
}

// Attends query row t (its sequence's block table `table`) with the heads of KV head kv_head
// over positions [begin, end) (end > begin) and leaves each warp's unnormalised output and
// (m, l) in shared memory for combine_warps. Starts and ends with every thread in step: the
// caller's shared memory may be reused only after this returns. With prologue_issued the
// caller has issued and committed issue_prologue's groups itself.
template <class E, int kHeadDim, int kStages, bool kFp8>
__device__ __forceinline__ void attend_range(const Params& p, int t, const int32_t* table, int kv_head, int begin,
                                             int end, uint16_t* smem, bool prologue_issued = false) {
  constexpr int kStageBytes = stage_bytes<kHeadDim, kFp8>();
  uint8_t* ring = reinterpret_cast<uint8_t*>(smem);
  constexpr int kDimSteps = kHeadDim / 16;  // k-steps of Q K^T
  constexpr int kDimTiles = kHeadDim / 8;   // n-tiles of P V (output columns)
  constexpr int kRowStride = kHeadDim + kPad;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int group = lane / 4, quad = lane % 4;
  const int64_t kv_head_offset = static_cast<int64_t>(kv_head) * kHeadDim;
  const int num_tiles = (end - begin + kTile - 1) / kTile;

  // Prologue: the first kStages - 1 tiles in flight.
  if (!prologue_issued)
    issue_prologue<kHeadDim, kStages, kFp8, false>(p, table, kv_head, begin, end, smem, 0, INT_MAX, true);

  // Q of the group's heads as A fragments: rows group (head_a) and group + 8 (head_b); zero
  // for rows past the group.
  const int first_head = kv_head * p.group_size;
  uint32_t q[kDimSteps][4];
  {
    const uint16_t* q_row = p.query + static_cast<int64_t>(t) * p.query_stride;
    const bool valid_a = group < p.group_size, valid_b = group + 8 < p.group_size;
    const uint16_t* qa = q_row + (first_head + group) * kHeadDim + quad * 2;
    const uint16_t* qb = q_row + (first_head + group + 8) * kHeadDim + quad * 2;
#pragma unroll
    for (int ks = 0; ks < kDimSteps; ++ks) {
      q[ks][0] = valid_a ? *reinterpret_cast<const uint32_t*>(qa + ks * 16) : 0u;
      q[ks][1] = valid_b ? *reinterpret_cast<const uint32_t*>(qb + ks * 16) : 0u;
      q[ks][2] = valid_a ? *reinterpret_cast<const uint32_t*>(qa + ks * 16 + 8) : 0u;
      q[ks][3] = valid_b ? *reinterpret_cast<const uint32_t*>(qb + ks * 16 + 8) : 0u;
    }
  }
  float o[kDimTiles][4];  // rows group (0, 1) and group + 8 (2, 3), dims dt * 8 + 2 quad (+1)
#pragma unroll
  for (int dt = 0; dt < kDimTiles; ++dt) o[dt][0] = o[dt][1] = o[dt][2] = o[dt][3] = 0.f;
  float m_a = -INFINITY, m_b = -INFINITY;  // running max (log2 units), same in a row's 4 lanes
  float l_a = 0.f, l_b = 0.f;              // running sum over this lane's columns only

  // ldmatrix row addresses of this lane within a warp's 16 positions (see the layouts above):
  //   K (x4, no trans): matrix j = lane / 8 -> positions (j / 2) * 8 + lane % 8, dims + (j % 2) * 8
  //     giving b0, b1 of position tile 0 then b0, b1 of position tile 1 for one k-step.
  //   V (x4, trans): matrix j -> positions (j % 2) * 8 + lane % 8, dims + (j / 2) * 8
  //     giving b0, b1 of dim tile 2 jj then b0, b1 of dim tile 2 jj + 1.
  const int k_lane_offset = ((lane / 16) * 8 + lane % 8) * kRowStride + ((lane / 8) % 2) * 8;
  const int v_lane_offset = (((lane / 8) % 2) * 8 + lane % 8) * kRowStride + (lane / 16) * 8;

  for (int i = 0; i < num_tiles; ++i) {
    cp_async_wait<kStages - 2>();  // tile i has landed (this thread's copies) ...
    __syncthreads();               // ... everyone's, and every warp is done with tile i - 1's stage
    {
      const int next = i + kStages - 1;
      if (next < num_tiles)
        load_tile<kHeadDim, kFp8>(p, table, kv_head_offset, begin + next * kTile, begin, end,
                                  ring + (next % kStages) * kStageBytes);
      cp_async_commit();
    }
    const int warp_pos0 = begin + i * kTile + warp * 16;  // this warp's first position
    if (warp_pos0 >= end) continue;                       // all 16 masked: nothing to add
    const uint16_t* k_tile;                               // this warp's 16 positions, fp16 rows kRowStride apart
    const uint16_t* v_tile;
    if constexpr (kFp8) {
      constexpr int kRowBytes = ring_row_bytes<kHeadDim, true>();
      const uint8_t* stage = ring + (i % kStages) * kStageBytes + warp * 16 * kRowBytes;
      uint16_t* widened = reinterpret_cast<uint16_t*>(ring + kStages * kStageBytes) + warp * 2 * 16 * kRowStride;
      __syncwarp();  // the previous tile's ldmatrix reads of `widened` are done
      widen_warp_rows<kHeadDim>(stage, widened, lane);
      widen_warp_rows<kHeadDim>(stage + kTile * kRowBytes, widened + 16 * kRowStride, lane);
      __syncwarp();
      k_tile = widened;
      v_tile = widened + 16 * kRowStride;
    } else {
      k_tile = reinterpret_cast<const uint16_t*>(ring + (i % kStages) * kStageBytes) + warp * 16 * kRowStride;
      v_tile = k_tile + kTile * kRowStride;
    }

    // S = Q K^T: 16 heads x 16 positions (two n-tiles of 8).
    float sc[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};
#pragma unroll
    for (int ks = 0; ks < kDimSteps; ++ks) {
      uint32_t b[4];
      ldmatrix_x4(b, k_tile + k_lane_offset + ks * 16);
      E::mma_16816(sc[0], q[ks], b[0], b[1]);
      E::mma_16816(sc[1], q[ks], b[2], b[3]);
    }

    // Mask and scale (rows a = group, b = group + 8), then the softmax step (finite: position
    // warp_pos0 < end is inside, and the q rows are finite, 0 past the group).
#pragma unroll
    for (int nt = 0; nt < 2; ++nt) {
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const bool inside = warp_pos0 + nt * 8 + quad * 2 + e < end;
        sc[nt][e] = inside ? sc[nt][e] * p.scale_log2 : -INFINITY;
        sc[nt][2 + e] = inside ? sc[nt][2 + e] * p.scale_log2 : -INFINITY;
      }
    }
    const SoftmaxRescale rescale = online_softmax_step(sc, m_a, m_b, l_a, l_b);

    // O = O * alpha + P V: the S accumulators of the two position tiles are P's A fragment.
    const uint32_t a[4] = {E::pack2(sc[0][0], sc[0][1]), E::pack2(sc[0][2], sc[0][3]), E::pack2(sc[1][0], sc[1][1]),
                           E::pack2(sc[1][2], sc[1][3])};
#pragma unroll
    for (int jj = 0; jj < kDimTiles / 2; ++jj) {
      uint32_t b[4];
      ldmatrix_x4_trans(b, v_tile + v_lane_offset + jj * 16);
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        float(&acc)[4] = o[2 * jj + half];
        acc[0] *= rescale.a;
        acc[1] *= rescale.a;
        acc[2] *= rescale.b;
        acc[3] *= rescale.b;
        E::mma_16816(acc, a, b[2 * half], b[2 * half + 1]);
      }
    }
  }
  cp_async_wait<0>();
  __syncthreads();  // the ring is free: reused below for the cross-warp combine

#pragma unroll
  for (int offset = 1; offset < 4; offset *= 2) {
    l_a += __shfl_xor_sync(0xffffffffu, l_a, offset);
    l_b += __shfl_xor_sync(0xffffffffu, l_b, offset);
  }
  // Shared memory, reused: s_o [warp][row][kHeadDim] f32 (unnormalised), s_ml [warp][row][2].
  float* s_o = reinterpret_cast<float*>(smem);
  float* s_ml = s_o + kWarps * kMaxGroup * kHeadDim;
  float* row_a = s_o + (warp * kMaxGroup + group) * kHeadDim + quad * 2;
  float* row_b = row_a + 8 * kHeadDim;
#pragma unroll
  for (int dt = 0; dt < kDimTiles; ++dt) {
    *reinterpret_cast<float2*>(row_a + dt * 8) = make_float2(o[dt][0], o[dt][1]);
    *reinterpret_cast<float2*>(row_b + dt * 8) = make_float2(o[dt][2], o[dt][3]);
  }
  if (quad == 0) {
    s_ml[(warp * kMaxGroup + group) * 2] = m_a;  // -inf for a warp that saw no position
    s_ml[(warp * kMaxGroup + group) * 2 + 1] = l_a;
    s_ml[(warp * kMaxGroup + group + 8) * 2] = m_b;
    s_ml[(warp * kMaxGroup + group + 8) * 2 + 1] = l_b;
  }
  __syncthreads();
}

// Combines attend_range's warps: for row r of the group and dim d, emit(r, d, value, m, l)
// with value normalised by l (the range's softmax sum) and m its max in log2 units. Warp 0
// always saw position `begin`, so the max over warps is finite; a warp with m = -inf gets
// weight 0. Ends with every thread in step (the shared memory is free again).
template <int kHeadDim, typename Emit>
__device__ __forceinline__ void combine_warps(const Params& p, const uint16_t* smem, Emit&& emit) {
  const float* s_o = reinterpret_cast<const float*>(smem);
  const float* s_ml = s_o + kWarps * kMaxGroup * kHeadDim;
  for (int idx = threadIdx.x; idx < p.group_size * kHeadDim; idx += kThreads) {
    const int r = idx / kHeadDim, d = idx % kHeadDim;
    float m_max = -INFINITY;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) m_max = fmaxf(m_max, s_ml[(w * kMaxGroup + r) * 2]);
    float l_sum = 0.f, value = 0.f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) {
      const float weight = exp2f(s_ml[(w * kMaxGroup + r) * 2] - m_max);
      l_sum += weight * s_ml[(w * kMaxGroup + r) * 2 + 1];
      value += weight * s_o[(w * kMaxGroup + r) * kHeadDim + d];
    }
    emit(r, d, value / l_sum * p.v_scale, m_max, l_sum);
  }
  __syncthreads();
}

// The visible length of query row t, or 0 when the row is padding or the prefill kernel's.
__device__ __forceinline__ int decode_visible(const Params& p, int t, int* sequence) {
  const int s = sequence_of_row(p, t);
  *sequence = s;
  if (s < 0) return 0;
  const int num_new = num_new_rows(p, s);
  if (num_new >= p.tensor_core_min_rows) return 0;
  return max(0, visible_length(p, s, t - p.seq_token_start[s]));
}

// Merges `pieces` partials of one (row, KV head), weights l_i * 2^(m_i - max m) / total: row r
// of piece i is partial row partial_row(i, r) (partial_out [row][D], partial_ml [row][2]).
// Writes the fp16 rows at out; reuses the shared memory; ends with every thread in step.
template <class E, int kHeadDim, typename PartialRow>
__device__ __forceinline__ void merge_pieces(const Params& p, int pieces, PartialRow&& partial_row, uint16_t* out,
                                             uint16_t* smem) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int group_size = p.group_size;
  float* s_weight = reinterpret_cast<float*>(smem);  // [kMaxGroup][kMaxDecodePieces]
  for (int r = warp; r < group_size; r += kWarps) {
    float m_max = -INFINITY;
    for (int i = lane; i < pieces; i += 32) m_max = fmaxf(m_max, __ldcg(p.partial_ml + partial_row(i, r) * 2));
#pragma unroll
    for (int o = 16; o > 0; o /= 2) m_max = fmaxf(m_max, __shfl_xor_sync(0xffffffffu, m_max, o));
    float total = 0.f;
    for (int i = lane; i < pieces; i += 32) {
      const float* ml = p.partial_ml + partial_row(i, r) * 2;
      const float w = __ldcg(ml + 1) * exp2f(__ldcg(ml) - m_max);
      s_weight[r * kMaxDecodePieces + i] = w;
      total += w;
    }
#pragma unroll
    for (int o = 16; o > 0; o /= 2) total += __shfl_xor_sync(0xffffffffu, total, o);
    __syncwarp();
    const float inv_total = 1.f / total;
    for (int i = lane; i < pieces; i += 32) s_weight[r * kMaxDecodePieces + i] *= inv_total;
  }
  __syncthreads();
  // 4 dims per thread (16-byte loads from L2), so the partials' latency is what the merge costs.
  for (int idx = threadIdx.x; idx < group_size * kHeadDim / 4; idx += kThreads) {
    const int r = idx / (kHeadDim / 4), d = idx % (kHeadDim / 4) * 4;
    const float* weight = s_weight + r * kMaxDecodePieces;
    float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll 4
    for (int i = 0; i < pieces; ++i) {
      const float4 v = __ldcg(reinterpret_cast<const float4*>(p.partial_out + partial_row(i, r) * kHeadDim + d));
      acc.x = fmaf(weight[i], v.x, acc.x);
      acc.y = fmaf(weight[i], v.y, acc.y);
      acc.z = fmaf(weight[i], v.z, acc.z);
      acc.w = fmaf(weight[i], v.w, acc.w);
    }
    uint16_t* o4 = out + r * kHeadDim + d;
    o4[0] = E::from_float(acc.x);
    o4[1] = E::from_float(acc.y);
    o4[2] = E::from_float(acc.z);
    o4[3] = E::from_float(acc.w);
  }
  __syncthreads();
}

// The partitioned form (the default): CTA = (row, KV head, partition of partition_tokens
// positions), grid.z = num_splits from the host's context bound; partitions past the row's
// length exit. With one partition the CTA writes fp16; otherwise each writes its partial to
// [t][head][split] and the last of the (row, KV head) to finish merges them (its counter).
template <class E, int kHeadDim, int kStages, bool kFp8>
__global__ void __launch_bounds__(kThreads, 2) decode_tensor_core_kernel(Params p) {
  extern __shared__ __align__(16) uint16_t smem[];  // the ring (kStages x {K, V}), then any widened tiles
  wait_for_prior_kernels();
  allow_dependent_launch();
  const int t = blockIdx.x, kv_head = blockIdx.y, split = blockIdx.z;
  int s;
  const int visible = decode_visible(p, t, &s);
  const int begin = split * p.partition_tokens;
  if (begin >= visible) return;  // padding, the prefill kernel's row, or past the row's context
  const int end = split == p.num_splits - 1 ? visible : min(visible, begin + p.partition_tokens);
  const int num_active = min(p.num_splits, (visible + p.partition_tokens - 1) / p.partition_tokens);
  const int32_t* table = p.block_tables + static_cast<int64_t>(s) * p.max_blocks_per_seq;
  attend_range<E, kHeadDim, kStages, kFp8>(p, t, table, kv_head, begin, end, smem);
  const int first_head = kv_head * p.group_size;
  uint16_t* out = p.output + static_cast<int64_t>(t) * p.output_stride + first_head * kHeadDim;
  if (num_active == 1) {
    combine_warps<kHeadDim>(
        p, smem, [&](int r, int d, float value, float, float) { out[r * kHeadDim + d] = E::from_float(value); });
    return;
  }
  // Partial rows [t][head][split]: row r of split i at part0 + r * num_splits + i.
  const int64_t part0 = (static_cast<int64_t>(t) * p.num_heads + first_head) * p.num_splits;
  combine_warps<kHeadDim>(p, smem, [&](int r, int d, float value, float m, float l) {
    const int64_t part = part0 + static_cast<int64_t>(r) * p.num_splits + split;
    p.partial_out[part * kHeadDim + d] = value;
    if (d == 0) {
      p.partial_ml[part * 2] = m;
      p.partial_ml[part * 2 + 1] = l;
    }
  });
  const int counter = t * p.num_kv_heads + kv_head;
  if (!last_split_block_of_tile(p.split_counters, counter, num_active)) return;
  merge_pieces<E, kHeadDim>(
      p, num_active, [&](int i, int r) { return part0 + static_cast<int64_t>(r) * p.num_splits + i; }, out, smem);
  if (threadIdx.x == 0) p.split_counters[counter] = 0;  // ready for the next launch
}

// Tiles of 64 positions that new row j of a sequence (context, num_new) reads per KV head.
__device__ __forceinline__ int row_tiles(int context, int num_new, int j) {
  return (max(0, context - num_new + j + 1) + kTile - 1) / kTile;
}

// Tiles of all of sequence s's decode rows per KV head (0 when the prefill kernel takes it).
__device__ __forceinline__ int sequence_tiles(const Params& p, int s) {
  const int num_new = num_new_rows(p, s), context = p.seq_context_len[s];
  if (num_new >= p.tensor_core_min_rows) return 0;
  int tiles = 0;
  for (int j = 0; j < num_new; ++j) tiles += row_tiles(context, num_new, j);
  return tiles;
}

// The balanced form: the decode rows' work, (row, KV head) pairs of ceil(visible / 64) tiles
// each laid end to end (sequence, then row, then KV head), is cut into gridDim.x ranges of
// equal tile counts (the last CTAs one fewer), whatever the lengths: every CTA streams the
// same bytes in one wave. A pair inside one range is written in fp16 at once; a pair cut by
// range boundaries leaves a normalised partial and (m, l) per piece in the CTA's slot (0 for
// its first pair, 1 for its last), and the CTA that finishes the pair's last piece merges
// them (tickets on counter[owner of the pair's last tile], reset to 0 by the merger).
template <class E, int kHeadDim, int kStages, bool kFp8>
__global__ void __launch_bounds__(kThreads, 2) decode_balanced_kernel(Params p) {
  extern __shared__ __align__(16) uint16_t smem[];
  // The plan, before waiting for the previous kernel (the step's inputs are not a kernel's
  // output): per-sequence tile totals, prefix-summed in shared memory.
  int* prefix = reinterpret_cast<int*>(smem);  // [num_seqs + 1]
  __shared__ int warp_sums[kWarps];
  const int num_seqs = p.num_seqs, hkv = p.num_kv_heads;
  const int chunk = (num_seqs + kThreads - 1) / kThreads;
  const int first_seq = threadIdx.x * chunk, last_seq = min(num_seqs, first_seq + chunk);
  int sum = 0;
  for (int s = first_seq; s < last_seq; ++s) {
    prefix[s] = sum;  // within the thread's chunk for now
    sum += sequence_tiles(p, s) * hkv;
  }
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  int inclusive = sum;
#pragma unroll
  for (int offset = 1; offset < 32; offset *= 2) {
    const int v = __shfl_up_sync(0xffffffffu, inclusive, offset);
    if (lane >= offset) inclusive += v;
  }
  if (lane == 31) warp_sums[warp] = inclusive;
  __syncthreads();
  int base = inclusive - sum;
  for (int w = 0; w < warp; ++w) base += warp_sums[w];
  for (int s = first_seq; s < last_seq; ++s) prefix[s] += base;
  int total_tiles = 0;
  for (int w = 0; w < kWarps; ++w) total_tiles += warp_sums[w];
  if (threadIdx.x == 0) prefix[num_seqs] = total_tiles;
  __syncthreads();

  // This CTA's range [range_begin, range_end) of the total; at most one CTA per tile.
  const int num_ctas = min(static_cast<int>(gridDim.x), total_tiles);
  const int c = blockIdx.x;
  const auto boundary = [&](int i) { return static_cast<int>(static_cast<int64_t>(i) * total_tiles / num_ctas); };
  const auto owner = [&](int tile) {  // the CTA whose range holds `tile`
    return static_cast<int>((static_cast<int64_t>(tile + 1) * num_ctas - 1) / total_tiles);
  };
  if (c >= num_ctas) return;
  const int range_begin = boundary(c), range_end = boundary(c + 1);
  // The pair holding range_begin: sequence s (upper bound in the prefix), row j, KV head h,
  // and its tile `local` within the pair.
  int s = 0;
  {
    int lo = 0, hi = num_seqs;  // prefix[lo] <= range_begin < prefix[hi]
    while (hi - lo > 1) {
      const int mid = (lo + hi) / 2;
      if (prefix[mid] <= range_begin) lo = mid;
      else hi = mid;
    }
    s = lo;
  }
  int offset = range_begin - prefix[s], j = 0, h = 0, local = 0;
  {
    const int num_new = num_new_rows(p, s), context = p.seq_context_len[s];
    for (;; ++j) {
      const int tiles = row_tiles(context, num_new, j);
      if (offset < tiles * hkv) {
        h = offset / tiles;
        local = offset % tiles;
        break;
      }
      offset -= tiles * hkv;
    }
  }
  __syncthreads();  // the prefix is read: the ring is free

  wait_for_prior_kernels();
  allow_dependent_launch();
  float* partial_out = p.partial_out;
  float* partial_ml = p.partial_ml;
  const int group_size = p.group_size;
  for (int cur = range_begin, slot = 0; cur < range_end; slot = 1) {
    const int num_new = num_new_rows(p, s), context = p.seq_context_len[s];
    const int t = p.seq_token_start[s] + j;
    const int tiles = row_tiles(context, num_new, j);
    const int visible = context - num_new + j + 1;
    if (tiles == 0) {  // a row with nothing visible (not in valid input): no work, no output
      if (++j == num_new) {
        j = 0;
        do { ++s; } while (sequence_tiles(p, s) == 0);
      }
      continue;
    }
    const int take = min(tiles - local, range_end - cur);
    const int begin = local * kTile, end = min(visible, (local + take) * kTile);
    const int32_t* table = p.block_tables + static_cast<int64_t>(s) * p.max_blocks_per_seq;
    attend_range<E, kHeadDim, kStages, kFp8>(p, t, table, h, begin, end, smem);
    const int first_head = h * group_size;
    uint16_t* out = p.output + static_cast<int64_t>(t) * p.output_stride + first_head * kHeadDim;
    if (take == tiles) {
      combine_warps<kHeadDim>(
          p, smem, [&](int r, int d, float value, float, float) { out[r * kHeadDim + d] = E::from_float(value); });
    } else {
      const int64_t my_slot = (2 * static_cast<int64_t>(c) + slot) * group_size;
      combine_warps<kHeadDim>(p, smem, [&](int r, int d, float value, float m, float l) {
        partial_out[(my_slot + r) * kHeadDim + d] = value;
        if (d == 0) {
          partial_ml[(my_slot + r) * 2] = m;
          partial_ml[(my_slot + r) * 2 + 1] = l;
        }
      });
      // The pair's pieces: CTAs first_cta .. last_cta, the first one's in slot 0 when its range
      // starts at the pair, else slot 1; every later one's in slot 0.
      const int pair_begin = cur - local;
      const int first_cta = owner(pair_begin), last_cta = owner(pair_begin + tiles - 1);
      const int pieces = last_cta - first_cta + 1;
      if (last_split_block_of_tile(p.split_counters, last_cta, pieces)) {
        // Piece i is CTA first_cta + i's: slot 0 (its first pair) unless it is the first piece
        // of a pair its range does not start at (then its last pair, slot 1).
        const auto partial_row = [&](int i, int r) {
          const int cta = first_cta + i;
          const int64_t slot = 2 * static_cast<int64_t>(cta) + (i == 0 && boundary(cta) != pair_begin ? 1 : 0);
          return slot * group_size + r;
        };
        merge_pieces<E, kHeadDim>(p, pieces, partial_row, out, smem);
        if (threadIdx.x == 0) p.split_counters[last_cta] = 0;  // ready for the next launch
      }
    }
    // Next pair: the next KV head, row, or sequence with decode rows.
    cur += take;
    local = 0;
    if (cur >= range_end) break;
    if (++h == hkv) {
      h = 0;
      if (++j == num_new) {
        j = 0;
        do { ++s; } while (sequence_tiles(p, s) == 0);  // never past the last sequence: tiles remain in range
      }
    }
  }
}

// The cluster form (the default for up to 4 rows): CTA = (row, KV head, rank r of a cluster of
// kDecodeCluster). The row's tiles are cut on the device, from its own length, into
// kDecodeCluster contiguous ranges (rank r takes the r-th; some may be empty), and the ranges'
// partials are merged through distributed shared memory: no workspace, no tickets, no second
// pass through L2. The merge order depends on the row's length alone. Before waiting for the
// previous kernel, each CTA finds its range from the step's inputs and starts copying the ring
// rows an earlier step wrote (positions before the sequence's new rows: no kernel of this step
// writes them); the new rows, Q and everything else come after the wait.
template <class E, int kHeadDim, int kStages, bool kFp8>
__global__ void __launch_bounds__(kThreads, 2) decode_cluster_kernel(Params p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  extern __shared__ __align__(16) uint16_t smem[];
  cooperative_groups::cluster_group cluster = cooperative_groups::this_cluster();
  const int rank = static_cast<int>(cluster.block_rank());
  const int t = blockIdx.x / kDecodeCluster, kv_head = blockIdx.y;
  int s;
  const int visible = decode_visible(p, t, &s);
  const int per_rank = ((visible + kTile - 1) / kTile + kDecodeCluster - 1) / kDecodeCluster * kTile;
  const int begin = rank * per_rank, end = min(visible, begin + per_rank);
  const bool has_range = begin < end;
  const int32_t* table = s >= 0 ? p.block_tables + static_cast<int64_t>(s) * p.max_blocks_per_seq : nullptr;
  const int written = s >= 0 ? p.seq_context_len[s] - num_new_rows(p, s) : 0;  // rows of earlier steps
  if (has_range) issue_prologue<kHeadDim, kStages, kFp8, true>(p, table, kv_head, begin, end, smem, 0, written, false);
  wait_for_prior_kernels();
  allow_dependent_launch();
  if (visible == 0) {  // the whole cluster's row: padding or the prefill kernel's
    cp_async_wait<0>();
    return;
  }
  // This CTA's partial, beside the warps' combine area in the ring: [kMaxGroup][kHeadDim] values
  // normalised by their own l, then [kMaxGroup] (m, l).
  float* part_o = reinterpret_cast<float*>(smem) + kWarps * kMaxGroup * (kHeadDim + 2);
  float* part_ml = part_o + kMaxGroup * kHeadDim;
  if (has_range) {
    issue_prologue<kHeadDim, kStages, kFp8, true>(p, table, kv_head, begin, end, smem, written, INT_MAX, true);
    attend_range<E, kHeadDim, kStages, kFp8>(p, t, table, kv_head, begin, end, smem, true);
    combine_warps<kHeadDim>(p, smem, [&](int r, int d, float value, float m, float l) {
      part_o[r * kHeadDim + d] = value;
      if (d == 0) {
        part_ml[2 * r] = m;
        part_ml[2 * r + 1] = l;
      }
    });
  } else if (threadIdx.x < kMaxGroup) {  // weight 0 in the merge (rank 0 always has a range)
    part_ml[2 * threadIdx.x] = -INFINITY;
    part_ml[2 * threadIdx.x + 1] = 0.f;
  }
  cluster.sync();  // every rank's partial is written
  const int first_head = kv_head * p.group_size;
  uint16_t* out = p.output + static_cast<int64_t>(t) * p.output_stride + first_head * kHeadDim;
  for (int idx = rank * kThreads + threadIdx.x; idx < p.group_size * kHeadDim; idx += kDecodeCluster * kThreads) {
    const int r = idx / kHeadDim, d = idx % kHeadDim;
    float m[kDecodeCluster], l[kDecodeCluster];
    float m_max = -INFINITY;
#pragma unroll
    for (int q = 0; q < kDecodeCluster; ++q) {
      const float* ml = cluster.map_shared_rank(part_ml, q) + 2 * r;
      m[q] = ml[0];
      l[q] = ml[1];
      m_max = fmaxf(m_max, m[q]);
    }
    float total = 0.f, value = 0.f;
#pragma unroll
    for (int q = 0; q < kDecodeCluster; ++q) {
      const float w = l[q] * exp2f(m[q] - m_max);  // 0 for an empty range
      total += w;
      if (w > 0.f) value = fmaf(w, cluster.map_shared_rank(part_o, q)[r * kHeadDim + d], value);
    }
    out[r * kHeadDim + d] = E::from_float(value / total);
  }
  cluster.sync();  // no rank leaves while another still reads its shared memory
#endif
}

// Whether this instance's kernels may have their dynamic shared memory here (once per process):
// false on GPUs with less than 104 KB per block (sm_86/89) for the 3-stage ring at D 128.
template <class E, int kHeadDim, int kStages, bool kFp8>
bool shared_memory_allowed() {
  static const bool allowed = [] {
    const int bytes = static_cast<int>(shared_bytes<kHeadDim, kStages, kFp8>());
    cudaError_t err = cudaFuncSetAttribute(decode_tensor_core_kernel<E, kHeadDim, kStages, kFp8>,
                                           cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
    if (err == cudaSuccess)
      err = cudaFuncSetAttribute(decode_balanced_kernel<E, kHeadDim, kStages, kFp8>,
                                 cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
    if (err == cudaSuccess)
      err = cudaFuncSetAttribute(decode_cluster_kernel<E, kHeadDim, kStages, kFp8>,
                                 cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
    if (err != cudaSuccess) (void)cudaGetLastError();  // not sticky: clear it for the launch checks
    return err == cudaSuccess;
  }();
  return allowed;
}

// CTAs of the balanced kernel resident at once on this device (one wave), at most kMaxDecodeCtas.
template <class E, int kHeadDim, int kStages, bool kFp8>
int balanced_ctas() {
  static const int ctas = [] {
    int device = 0, sms = 0, per_sm = 0;
    if (cudaGetDevice(&device) != cudaSuccess ||
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess ||
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, decode_balanced_kernel<E, kHeadDim, kStages, kFp8>,
                                                      kThreads,
                                                      shared_bytes<kHeadDim, kStages, kFp8>()) != cudaSuccess) {
      (void)cudaGetLastError();
      return 0;
    }
    return std::min(kMaxDecodeCtas, sms * std::max(per_sm, 1));
  }();
  return ctas;
}

template <class E, int kHeadDim, int kStages, bool kFp8>
Status launch(const Params& p, int num_tokens, DecodeForm form, cudaStream_t stream) {
  constexpr size_t kSmemBytes = shared_bytes<kHeadDim, kStages, kFp8>();
  static_assert((kWarps + 1) * kMaxGroup * (kHeadDim + 2) * 4 <= kSmemBytes,
                "the warp combine and the cluster form's partial fit in the ring");
  static_assert(kMaxGroup * kMaxDecodePieces * 4 <= kSmemBytes, "the merge weights fit in the ring");
  static_assert(kMaxDecodeSplits <= kMaxDecodePieces, "a partitioned row's weights fit too");
  if constexpr (kStages > 2) {
    if (!shared_memory_allowed<E, kHeadDim, kStages, kFp8>())
      return launch<E, kHeadDim, 2, kFp8>(p, num_tokens, form, stream);
  }
  if (!shared_memory_allowed<E, kHeadDim, kStages, kFp8>())
    return internal_error("cuda_paged_attention: the decode kernel's " + std::to_string(kSmemBytes) +
                          " bytes of shared memory are refused on this GPU");
  if (form == DecodeForm::kCluster) {
    if (static_cast<int64_t>(num_tokens) * kDecodeCluster > INT_MAX)
      return invalid_argument("cuda_paged_attention: too many rows for the cluster decode grid");
    CROSSPOINT_CUDA_RETURN_IF_ERROR(launch_programmatic_clusters(decode_cluster_kernel<E, kHeadDim, kStages, kFp8>,
                                                                 dim3(num_tokens * kDecodeCluster, p.num_kv_heads),
                                                                 dim3(kThreads), kDecodeCluster, kSmemBytes, stream, p),
                                    "decode_cluster_kernel launch");
    return last_launch_status("paged_attention decode_cluster_kernel launch");
  }
  const bool balanced = form == DecodeForm::kBalanced;
  const int ctas = balanced ? balanced_ctas<E, kHeadDim, kStages, kFp8>() : 0;
  const bool fits = static_cast<size_t>(p.num_seqs + 1) * sizeof(int) <= kSmemBytes;
  if (ctas > 0 && fits && p.partial_out != nullptr) {
    CROSSPOINT_CUDA_RETURN_IF_ERROR(launch_programmatic(decode_balanced_kernel<E, kHeadDim, kStages, kFp8>, dim3(ctas),
                                                        dim3(kThreads), kSmemBytes, stream, p),
                                    "decode_balanced_kernel launch");
    return last_launch_status("paged_attention decode_balanced_kernel launch");
  }
  const dim3 grid(num_tokens, p.num_kv_heads, p.num_splits);
  CROSSPOINT_CUDA_RETURN_IF_ERROR(launch_programmatic(decode_tensor_core_kernel<E, kHeadDim, kStages, kFp8>, grid,
                                                      dim3(kThreads), kSmemBytes, stream, p),
                                  "decode_tensor_core_kernel launch");
  return last_launch_status("paged_attention decode_tensor_core_kernel launch");
}

}  // namespace

bool decode_tensor_core_supports(int head_dim, int group_size) {
  return (head_dim == 64 || head_dim == 128) && group_size >= 1 && group_size <= kMaxGroup;
}

bool decode_cluster_supported() { return cuda_device_info().major >= 9; }

Status launch_decode_tensor_core(const Params& p, int num_tokens, DecodeForm form, cudaStream_t stream) {
  if (p.num_splits < 1 || p.num_splits > kMaxDecodeSplits || p.num_kv_heads > 65535)
    return invalid_argument("cuda_paged_attention: decode grid (" + std::to_string(p.num_kv_heads) + " KV heads, " +
                            std::to_string(p.num_splits) + " splits) out of range");
  if (p.num_splits > 1 && static_cast<int64_t>(num_tokens) * p.num_kv_heads > kDecodeSplitCounters)
    return invalid_argument("cuda_paged_attention: decode split over more (row, KV head) pairs than counters");
  using F16 = Element16F16;
  using BF16 = Element16BF16;  // never with an fp8 cache (check_args)
  if (p.head_dim == 128)
    return p.bf16     ? launch<BF16, 128, 3, false>(p, num_tokens, form, stream)
           : p.kv_fp8 ? launch<F16, 128, 3, true>(p, num_tokens, form, stream)
                      : launch<F16, 128, 3, false>(p, num_tokens, form, stream);
  if (p.head_dim == 64)
    return p.bf16     ? launch<BF16, 64, 3, false>(p, num_tokens, form, stream)
           : p.kv_fp8 ? launch<F16, 64, 3, true>(p, num_tokens, form, stream)
                      : launch<F16, 64, 3, false>(p, num_tokens, form, stream);
  return invalid_argument("cuda_paged_attention: tensor-core decode needs head_dim 64 or 128, got " +
                          std::to_string(p.head_dim));
}

}  // namespace crosspoint::cuda::attention_internal
