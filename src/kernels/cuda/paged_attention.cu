// Paged attention for a flat batch of prefill chunks and decodes (paged_attention.h): the
// split-context CUDA-core kernel, its merge kernel and the launcher that also starts the
// tensor-core prefill kernel (paged_attention_prefill.cu) for sequences with >= 16 new rows.
//
// Split-context kernel (flash-decoding over the paged cache, CUDA cores, fp32 math):
//   * One CTA per (query row t, KV head, chunk of up to 8 query heads of that GQA group,
//     context split). All query heads of the group share the CTA, so each K/V row is read
//     once per (row, KV head) instead of once per query head.
//   * The CTA's context range [split * P, ...) is walked in tiles of 64 positions with an
//     online softmax (running max m and sum l per head, log2 domain). Within a tile,
//     kThreadsPerRow threads cover one K/V row (16 bytes = 8 fp16 each, D/8 of them), the
//     other thread groups take other rows; the 8 heads' dot products are reduced together
//     with a halving butterfly of warp shuffles (reduce_scatter_8).
//   * Splits: when rows x KV heads x head chunks cannot fill the GPU (decode at small and
//     medium batch) the context is cut into partitions of P tokens (64 to 256, finer for
//     smaller batches), P fixed by the batch size alone: a row's work spreads over
//     ceil(context / P) CTAs whatever the host's context bound (a CUDA graph captured for
//     max_model_len would otherwise put all of a short context in one CTA). grid.z CTAs per
//     (row, KV head) walk the partitions z, z + grid.z, ...; each writes every partition's
//     normalised partial output and (m, l) to the workspace and a second kernel merges them.
//     With one split the CTA writes the fp16 output directly and no second kernel runs.
//   * Small batches on sm_90 (rows x KV heads x head chunks <= 128, e.g. decode batch <= 32 at
//     the 7B shape) take the cluster merge instead: grid.z CTAs (up to 16) per (row, KV head,
//     head chunk) form one thread-block cluster; rank z attends to an equal share of the
//     row's real visible tiles (read on the device, so a short context under a long host bound
//     still spreads over the whole cluster), and the ranks merge their (m, l, output) through
//     distributed shared memory. One launch, no workspace, no merge kernel: at batch 1 the
//     two-kernel path paid a second launch and a global round trip through the workspace, and
//     sized its partitions by the host bound (4096 in a graph), leaving most CTAs idle.
//   * The grid depends only on host integers (num_tokens, heads, max_context_len), so a
//     captured graph stays valid; rows past seq_token_start[num_seqs], or partitions past a
//     row's visible length, exit at once.
// It handles every row when the tensor-core kernel cannot (other head dims, odd output
// strides) or is turned off (cuda_paged_attention_split_only): each prefill row then reads
// its own causal prefix (mostly from L2), correct for any chunk size but slow.
#include <cooperative_groups.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <string>

#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/programmatic_launch.cuh"
#include "kernels/cuda/paged_attention.h"
#include "kernels/cuda/paged_attention_params.cuh"

namespace crosspoint::cuda {
namespace {

using namespace attention_internal;

constexpr int kThreads = 128;        // 4 warps per CTA

// The context range of one split; the last split runs to the end so that a context longer
// than the host bound is still attended in full (only slower).
__device__ __forceinline__ void split_range(const Params& p, int split, int visible, int* begin, int* end) {
  *begin = split * p.partition_tokens;
  *end = split == p.num_splits - 1 ? visible : min(visible, *begin + p.partition_tokens);
}

__device__ __forceinline__ void unpack8(const uint4& v, float* f) {
  const __half2* h = reinterpret_cast<const __half2*>(&v);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 x = __half22float2(h[i]);
    f[2 * i] = x.x;
    f[2 * i + 1] = x.y;
  }
}

// Sums each of 8 values over the kLanes lanes of a row group; every lane returns one of the
// 8 sums and its index in *index. A butterfly that halves the values at each of the first
// three steps (a lane keeps one half and sends the other), then plain xor steps: 4 + 2 + 1
// (+ 1 or 2) shuffles instead of 8 per step. Lanes whose low log2(kLanes / 8) bits are 0
// hold the 8 distinct indices.
template <int kLanes>
__device__ __forceinline__ float reduce_scatter_8(const float (&v)[8], int lane_in_row, int* index) {
  static_assert(kLanes >= 8 && kLanes <= 32, "8 to 32 lanes per row");
  const bool upper4 = lane_in_row & (kLanes / 2);
  float v4[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float send = upper4 ? v[i] : v[i + 4];
    const float keep = upper4 ? v[i + 4] : v[i];
    v4[i] = keep + __shfl_xor_sync(0xffffffffu, send, kLanes / 2);
  }
  const bool upper2 = lane_in_row & (kLanes / 4);
  float v2[2];
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const float send = upper2 ? v4[i] : v4[i + 2];
    const float keep = upper2 ? v4[i + 2] : v4[i];
    v2[i] = keep + __shfl_xor_sync(0xffffffffu, send, kLanes / 4);
  }
  const bool upper1 = lane_in_row & (kLanes / 8);
  float sum = (upper1 ? v2[1] : v2[0]) + __shfl_xor_sync(0xffffffffu, upper1 ? v2[0] : v2[1], kLanes / 8);
#pragma unroll
  for (int offset = kLanes / 16; offset > 0; offset /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
  *index = (upper4 ? 4 : 0) + (upper2 ? 2 : 0) + (upper1 ? 1 : 0);
  return sum;
}

// The cluster half of paged_attention_split_kernel<*, true>: this CTA (rank z of grid.z, the
// cluster) attends to tiles [z n / Z, (z + 1) n / Z) of the row's n = ceil(visible / 64) tiles,
// publishes its normalised output and (m, l) in its shared memory, and after a cluster
// barrier every rank merges a 1/Z slice of the [heads, D] outputs by reading all ranks'
// shared memory (weights l_z 2^(m_z - max m), empty shares weigh 0). The second barrier keeps
// each CTA's shared memory alive until the other ranks have read it.
template <typename Attend, typename Normalised>
__device__ __forceinline__ void cluster_attend_and_merge(const Params& p, int visible, int t, int head_begin,
                                                         int num_heads_here, Attend& attend, Normalised& normalised,
                                                         const float* s_m, const float* s_l) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  namespace cg = cooperative_groups;
  __shared__ float s_result[kHeadsPerCta * kMaxHeadDim];       // [heads here, D] this rank's normalised output
  __shared__ float s_rank_m[kMaxClusterCtas][kHeadsPerCta];  // every rank's (m, l) per head, copied here
  __shared__ float s_rank_l[kMaxClusterCtas][kHeadsPerCta];
  __shared__ float s_weight[kMaxClusterCtas][kHeadsPerCta];  // merge weight of each rank, summing to 1
  cg::cluster_group cluster = cg::this_cluster();
  const int rank = static_cast<int>(cluster.block_rank());
  const int num_ranks = static_cast<int>(cluster.num_blocks());
  const int num_tiles = (visible + kTileTokens - 1) / kTileTokens;
  const int begin = rank * num_tiles / num_ranks * kTileTokens;
  const int end = min(visible, (rank + 1) * num_tiles / num_ranks * kTileTokens);
  attend(begin, end);
  const int num_values = num_heads_here * p.head_dim;
  for (int idx = threadIdx.x; idx < num_values; idx += kThreads) s_result[idx] = normalised(idx / p.head_dim, idx % p.head_dim);
  cluster.sync();  // release this CTA's s_result, s_m, s_l; acquire the other ranks'

  // Weights: thread (z, h) fetches rank z's (m, l) of head h (one remote round trip for all),
  // then computes its own normalised weight from the local copies.
  static_assert(kMaxClusterCtas * kHeadsPerCta <= kThreads, "one thread per (rank, head)");
  const int my_z = threadIdx.x / kHeadsPerCta, my_h = threadIdx.x % kHeadsPerCta;
  const bool weight_thread = my_z < num_ranks && my_h < num_heads_here;
  if (weight_thread) {
    s_rank_m[my_z][my_h] = *cluster.map_shared_rank(s_m + my_h, my_z);
    s_rank_l[my_z][my_h] = *cluster.map_shared_rank(s_l + my_h, my_z);
  }
  __syncthreads();
  if (weight_thread) {
    float m_max = -INFINITY;
    for (int z = 0; z < num_ranks; ++z)
      if (s_rank_l[z][my_h] > 0.f) m_max = fmaxf(m_max, s_rank_m[z][my_h]);
    float total = 0.f;  // > 0: some rank holds tile 0, and visible >= 1
    for (int z = 0; z < num_ranks; ++z)
      if (s_rank_l[z][my_h] > 0.f) total += s_rank_l[z][my_h] * exp2f(s_rank_m[z][my_h] - m_max);
    const float l = s_rank_l[my_z][my_h];
    s_weight[my_z][my_h] = l > 0.f ? l * exp2f(s_rank_m[my_z][my_h] - m_max) / total : 0.f;
  }
  __syncthreads();
  for (int idx = rank * kThreads + threadIdx.x; idx < num_values; idx += num_ranks * kThreads) {
    const int h = idx / p.head_dim, d = idx % p.head_dim;
    float value = 0.f;
#pragma unroll
    for (int z = 0; z < kMaxClusterCtas; ++z) {  // unrolled: every rank's load in flight at once
      const float w = z < num_ranks ? s_weight[z][h] : 0.f;
      if (w > 0.f) value = fmaf(w, *cluster.map_shared_rank(s_result + idx, z), value);
    }
    p.output[t * p.output_stride + (head_begin + h) * p.head_dim + d] = __half_as_ushort(__float2half_rn(value));
  }
  cluster.sync();
#else
  __trap();  // the host launches cluster kernels only on sm_90 and newer
#endif
}

// kThreadsPerRow threads cover one K/V row of D fp16 (8 each; lanes past D idle):
// 16 for D = 128, 8 for D = 64, 32 for the generic path (any multiple of 8 up to 256).
// kClusterMerge = false: CTA z walks the partitions z, z + grid.z, ... of its row, writing the
// output (one split) or each partition's partial (the merge kernel follows).
// kClusterMerge = true (sm_90): grid.z CTAs form one thread-block cluster per (row, KV head,
// head chunk); rank z attends to its share of the row's visible tiles (an equal share of the
// real length read on the device, not of the host bound), then the cluster merges the shares
// through distributed shared memory: one kernel, no workspace.
template <int kThreadsPerRow, bool kClusterMerge>
__global__ void __launch_bounds__(kThreads) paged_attention_split_kernel(Params p) {
  wait_for_prior_kernels();
  allow_dependent_launch();
  constexpr int kRowGroups = kThreads / kThreadsPerRow;        // rows in flight per step
  constexpr int kRowsPerThread = kTileTokens / kRowGroups;     // per tile
  constexpr int kBatch = kRowsPerThread < 8 ? kRowsPerThread : 8;  // 16-byte loads issued together
  static_assert(kRowsPerThread % kBatch == 0, "tile rows must split into load batches");
  constexpr bool kPrefetchV = kRowsPerThread == kBatch;  // D 64 and 128; not the generic instance

  __shared__ float s_scores[kHeadsPerCta][kTileTokens];  // scores, then probabilities, of one tile
  __shared__ float s_alpha[kHeadsPerCta];                // rescale of the running output this tile
  __shared__ float s_m[kHeadsPerCta], s_l[kHeadsPerCta];
  __shared__ float4 s_reduce[kThreads * kHeadsPerCta * 2];  // final cross-group sum, 32 KB

  const int t = blockIdx.x;
  const int kv_head = blockIdx.y / p.head_chunks;
  const int head_begin = kv_head * p.group_size + (blockIdx.y % p.head_chunks) * kHeadsPerCta;
  const int num_heads_here = min(kHeadsPerCta, (kv_head + 1) * p.group_size - head_begin);
  const int lane_in_row = threadIdx.x % kThreadsPerRow;
  const int row_group = threadIdx.x / kThreadsPerRow;
  const int dim = lane_in_row * 8;
  const bool dim_valid = dim < p.head_dim;

  // q of the chunk's heads, pre-scaled into the log2 domain: [kHeadsPerCta][8] for this lane.
  // Loaded before the sequence lookup (every row below num_tokens exists, padding included),
  // so these loads overlap the dependent reads of seq_token_start and seq_context_len.
  float q[kHeadsPerCta][8];
#pragma unroll
  for (int h = 0; h < kHeadsPerCta; ++h) {
    uint4 raw = make_uint4(0, 0, 0, 0);
    if (h < num_heads_here && dim_valid)
      raw = *reinterpret_cast<const uint4*>(p.query + t * p.query_stride + (head_begin + h) * p.head_dim + dim);
    unpack8(raw, q[h]);
#pragma unroll
    for (int e = 0; e < 8; ++e) q[h][e] *= p.scale_log2;
  }

  // Row t's sequence and visible length. Returns below are the same for every CTA of a
  // cluster (they depend on the row only).
  int s = -1, visible = 0;
  if (t < p.num_seqs) {
    // Decode fast path: when sequence t owns exactly row t (seq_token_start[t] == t and
    // [t + 1] == t + 1, as in a decode batch) these three independent loads settle it in one
    // round trip, where the search below costs three or more dependent ones.
    const int start = p.seq_token_start[t], next_start = p.seq_token_start[t + 1];
    const int context = p.seq_context_len[t];
    if (start == t && next_start == t + 1) {
      s = t;
      visible = context;  // the header's rule with one new row
    }
  }
  if (s < 0) {
    s = sequence_of_row(p, t);
    if (s < 0 || num_new_rows(p, s) >= p.tensor_core_min_rows) return;  // padding, or the prefill kernel's
    visible = visible_length(p, s, t - p.seq_token_start[s]);
  }
  if (visible <= 0) return;
  if (!kClusterMerge && static_cast<int64_t>(blockIdx.z) * p.partition_tokens >= visible) return;  // none of ours visible

  const int32_t* table = p.block_tables + static_cast<int64_t>(s) * p.max_blocks_per_seq;
  const int64_t kv_row_stride = static_cast<int64_t>(p.num_kv_heads) * p.head_dim;
  const int64_t kv_head_offset = static_cast<int64_t>(kv_head) * p.head_dim + dim;

  // Online softmax over positions [begin, end) (empty allowed): leaves s_m, s_l and each row
  // group's unnormalised partial output in s_reduce, after a barrier.
  auto attend = [&](int begin, int end) {
    if (threadIdx.x < kHeadsPerCta) {
      s_m[threadIdx.x] = -INFINITY;
      s_l[threadIdx.x] = 0.f;
    }
    float acc[kHeadsPerCta][8] = {};  // this row group's share of sum_p prob * V, dims dim..dim+7

    for (int tile = begin; tile < end; tile += kTileTokens) {
      // The physical block of each of this thread's positions in the tile, looked up together
      // (one round trip) before any K or V load needs one; 0 past `end` (never used there).
      int32_t block_of[kRowsPerThread];
#pragma unroll
      for (int i = 0; i < kRowsPerThread; ++i) {
        const int position = tile + i * kRowGroups + row_group;
        block_of[i] = 0;
        if (position < end) block_of[i] = table[position / p.block_size];
      }
      auto offset_of = [&](int i) {  // of this thread's i-th position of the tile
        const int position = tile + i * kRowGroups + row_group;
        const int64_t slot = static_cast<int64_t>(block_of[i]) * p.block_size + position % p.block_size;
        return slot * kv_row_stride + kv_head_offset;
      };
      // When a thread's V rows of the tile fit in one load batch, their loads are issued now, so
      // they are in flight during the score and softmax steps (one memory round trip per tile).
      uint4 v_early[kPrefetchV ? kRowsPerThread : 1];
      if constexpr (kPrefetchV) {
#pragma unroll
        for (int i = 0; i < kRowsPerThread; ++i) {
          const int position = tile + i * kRowGroups + row_group;
          v_early[i] = make_uint4(0, 0, 0, 0);
          if (position < end && dim_valid) v_early[i] = *reinterpret_cast<const uint4*>(p.value_cache + offset_of(i));
        }
      }
      // Scores of this tile: s_scores[h][r] = q_h . k_(tile + r) (log2 units), -inf past `end`.
#pragma unroll
      for (int b = 0; b < kRowsPerThread; b += kBatch) {
        uint4 k_raw[kBatch];
#pragma unroll
        for (int i = 0; i < kBatch; ++i) {
          const int position = tile + (b + i) * kRowGroups + row_group;
          k_raw[i] = make_uint4(0, 0, 0, 0);
          if (position < end && dim_valid) k_raw[i] = *reinterpret_cast<const uint4*>(p.key_cache + offset_of(b + i));
        }
#pragma unroll
        for (int i = 0; i < kBatch; ++i) {
          float k[8];
          unpack8(k_raw[i], k);
          const int r = (b + i) * kRowGroups + row_group;
          float dot[kHeadsPerCta];  // this lane's 8-dim share of each head's dot product
#pragma unroll
          for (int h = 0; h < kHeadsPerCta; ++h) {
            dot[h] = 0.f;
#pragma unroll
            for (int e = 0; e < 8; ++e) dot[h] = fmaf(q[h][e], k[e], dot[h]);  // q = 0 for heads past the chunk
          }
          int head;
          const float score = reduce_scatter_8<kThreadsPerRow>(dot, lane_in_row, &head);
          if ((lane_in_row & (kThreadsPerRow / 8 - 1)) == 0) s_scores[head][r] = tile + r < end ? score : -INFINITY;
        }
      }
      __syncthreads();

      // Online softmax step, one warp per head (heads w, w + 4): new max, rescale, probabilities.
      const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
      for (int h = warp; h < num_heads_here; h += kThreads / 32) {
        float tile_max = -INFINITY;
        for (int r = lane; r < kTileTokens; r += 32) tile_max = fmaxf(tile_max, s_scores[h][r]);
#pragma unroll
        for (int offset = 16; offset > 0; offset /= 2) tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, offset));
        const float m_old = s_m[h];
        const float m_new = fmaxf(m_old, tile_max);  // finite: every tile has a visible position
        float sum = 0.f;
        for (int r = lane; r < kTileTokens; r += 32) {
          const float prob = exp2f(s_scores[h][r] - m_new);
          s_scores[h][r] = prob;
          sum += prob;
        }
#pragma unroll
        for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
        // Every lane read s_m[h] above; lane 0 overwrites it below. The shuffles converge the warp
        // but do not order shared memory: compute-sanitizer's racecheck reported this pair.
        __syncwarp();
        if (lane == 0) {
          const float alpha = exp2f(m_old - m_new);
          s_alpha[h] = alpha;
          s_m[h] = m_new;
          s_l[h] = s_l[h] * alpha + sum;
        }
      }
      __syncthreads();

      // acc = acc * alpha + sum_r prob[h][r] * v_r
#pragma unroll
      for (int h = 0; h < kHeadsPerCta; ++h) {
        if (h >= num_heads_here) break;
        const float alpha = s_alpha[h];
#pragma unroll
        for (int e = 0; e < 8; ++e) acc[h][e] *= alpha;
      }
#pragma unroll
      for (int b = 0; b < kRowsPerThread; b += kBatch) {
        uint4 v_raw[kBatch];
#pragma unroll
        for (int i = 0; i < kBatch; ++i) {
          if constexpr (kPrefetchV) {
            v_raw[i] = v_early[b + i];
          } else {
            const int position = tile + (b + i) * kRowGroups + row_group;
            v_raw[i] = make_uint4(0, 0, 0, 0);
            if (position < end && dim_valid) v_raw[i] = *reinterpret_cast<const uint4*>(p.value_cache + offset_of(b + i));
          }
        }
#pragma unroll
        for (int i = 0; i < kBatch; ++i) {
          float v[8];
          unpack8(v_raw[i], v);
          const int r = (b + i) * kRowGroups + row_group;
#pragma unroll
          for (int h = 0; h < kHeadsPerCta; ++h) {
            if (h >= num_heads_here) break;
            const float prob = s_scores[h][r];  // 0 past `end`
#pragma unroll
            for (int e = 0; e < 8; ++e) acc[h][e] = fmaf(prob, v[e], acc[h][e]);
          }
        }
      }
      __syncthreads();  // s_scores is rewritten by the next tile
    }

    // The row groups' partial outputs: s_reduce[row_group][h][dim .. dim+7] as 2 float4.
#pragma unroll
    for (int h = 0; h < kHeadsPerCta; ++h) {
      const int base = ((row_group * kHeadsPerCta + h) * kThreadsPerRow + lane_in_row) * 2;
      s_reduce[base] = make_float4(acc[h][0], acc[h][1], acc[h][2], acc[h][3]);
      s_reduce[base + 1] = make_float4(acc[h][4], acc[h][5], acc[h][6], acc[h][7]);
    }
    __syncthreads();
  };
  // Output (h, d) of the last attend(): the row groups summed, divided by l (0 when empty).
  auto normalised = [&](int h, int d) {
    const float* reduce = reinterpret_cast<const float*>(s_reduce);
    constexpr int kRowFloats = kThreadsPerRow * 8;  // floats per (row_group, head) in s_reduce
    float sum = 0.f;
#pragma unroll
    for (int g = 0; g < kRowGroups; ++g) sum += reduce[(g * kHeadsPerCta + h) * kRowFloats + d];
    return s_l[h] > 0.f ? sum / s_l[h] : 0.f;
  };

  if constexpr (kClusterMerge) {
    cluster_attend_and_merge(p, visible, t, head_begin, num_heads_here, attend, normalised, s_m, s_l);
  } else {
    // The merge kernel reads only the partitions that start inside `visible`.
    for (int split = blockIdx.z; split < p.num_splits; split += gridDim.z) {
      int begin, end;
      split_range(p, split, visible, &begin, &end);
      if (begin >= end) break;
      attend(begin, end);
      for (int idx = threadIdx.x; idx < num_heads_here * p.head_dim; idx += kThreads) {
        const int h = idx / p.head_dim, d = idx % p.head_dim;
        const float value = normalised(h, d);
        const int head = head_begin + h;
        if (p.num_splits == 1) {
          p.output[t * p.output_stride + head * p.head_dim + d] = __half_as_ushort(__float2half_rn(value));
        } else {
          const int64_t part = (static_cast<int64_t>(t) * p.num_heads + head) * p.num_splits + split;
          p.partial_out[part * p.head_dim + d] = value;
          if (d == 0) {
            p.partial_ml[part * 2] = s_m[h];
            p.partial_ml[part * 2 + 1] = s_l[h];
          }
        }
      }
      __syncthreads();  // s_reduce, s_m and s_l are rewritten by the next partition
    }
  }
}

// Merges the splits of one (row, head): weights l_i * 2^(m_i - max m), output = weighted mean
// of the normalised partials. Only splits that start inside the row's visible range exist.
__global__ void __launch_bounds__(kThreads) paged_attention_merge_kernel(Params p) {
  wait_for_prior_kernels();
  allow_dependent_launch();
  __shared__ float s_weight[kMaxSplits];
  __shared__ float s_inv_total;
  const int t = blockIdx.x, head = blockIdx.y;
  const int s = sequence_of_row(p, t);
  if (s < 0 || num_new_rows(p, s) >= p.tensor_core_min_rows) return;
  const int visible = visible_length(p, s, t - p.seq_token_start[s]);
  if (visible <= 0) return;
  const int num_active = min(p.num_splits, (visible + p.partition_tokens - 1) / p.partition_tokens);
  const int64_t part0 = (static_cast<int64_t>(t) * p.num_heads + head) * p.num_splits;
  if (threadIdx.x < 32) {
    float m_max = -INFINITY;
    for (int i = threadIdx.x; i < num_active; i += 32) m_max = fmaxf(m_max, p.partial_ml[(part0 + i) * 2]);
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2) m_max = fmaxf(m_max, __shfl_xor_sync(0xffffffffu, m_max, offset));
    float total = 0.f;
    for (int i = threadIdx.x; i < num_active; i += 32) {
      const float w = p.partial_ml[(part0 + i) * 2 + 1] * exp2f(p.partial_ml[(part0 + i) * 2] - m_max);
      s_weight[i] = w;
      total += w;
    }
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2) total += __shfl_xor_sync(0xffffffffu, total, offset);
    if (threadIdx.x == 0) s_inv_total = 1.f / total;
  }
  __syncthreads();
  for (int d = threadIdx.x; d < p.head_dim; d += kThreads) {
    float sum = 0.f;
    for (int i = 0; i < num_active; ++i) sum += s_weight[i] * p.partial_out[(part0 + i) * p.head_dim + d];
    p.output[t * p.output_stride + head * p.head_dim + d] = __half_as_ushort(__float2half_rn(sum * s_inv_total));
  }
}

// Thread-block clusters need compute capability 9.0; decided once per process (one device
// kind per process is assumed, as programmatic_launch.cu does).
bool clusters_supported() {
  static const bool supported = [] {
    int device = 0, major = 0;
    if (cudaGetDevice(&device) != cudaSuccess ||
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess) {
      cudaGetLastError();  // no device: launches fail on their own; leave no error behind
      return false;
    }
    return major >= 9;
  }();
  return supported;
}

// Largest cluster the kernel instance may use: 16 once the non-portable size is allowed, else 8.
template <int kThreadsPerRow>
int cluster_ctas_limit() {
  static const int limit = [] {
    if (cudaFuncSetAttribute(paged_attention_split_kernel<kThreadsPerRow, true>,
                             cudaFuncAttributeNonPortableClusterSizeAllowed, 1) != cudaSuccess) {
      cudaGetLastError();
      return 8;
    }
    return kMaxClusterCtas;
  }();
  return limit;
}

// Cap on cluster sizes, lowered when a launch is refused: 16, then the portable 8, then 0
// (decode takes the two-kernel path from then on).
std::atomic<int> g_cluster_cap{kMaxClusterCtas};

template <int kThreadsPerRow>
cudaError_t launch_cluster_merge(const Params& p, dim3 grid, cudaStream_t stream) {
  cudaLaunchAttribute attributes[2];
  attributes[0].id = cudaLaunchAttributeClusterDimension;
  attributes[0].val.clusterDim.x = 1;
  attributes[0].val.clusterDim.y = 1;
  attributes[0].val.clusterDim.z = grid.z;  // one cluster per (row, KV head, head chunk)
  attributes[1].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attributes[1].val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = dim3(kThreads);
  config.dynamicSmemBytes = 0;
  config.stream = stream;
  config.attrs = attributes;
  config.numAttrs = programmatic_launch_enabled() ? 2 : 1;
  return cudaLaunchKernelEx(&config, paged_attention_split_kernel<kThreadsPerRow, true>, p);
}


// The cluster limit of this device and head_dim's kernel instance (0: no clusters).
int device_cluster_limit(int head_dim) {
  if (!clusters_supported()) return 0;
  const int limit =
      head_dim == 128 ? cluster_ctas_limit<16>() : head_dim == 64 ? cluster_ctas_limit<8>() : cluster_ctas_limit<32>();
  return std::min(limit, g_cluster_cap.load(std::memory_order_relaxed));
}

enum class DecodeMerge {
  kAuto,     // cluster merge where cluster_ctas_for() allows it, else partials + merge kernel
  kTwoPass,  // always partials + merge kernel (the path before sm_90 and for large batches)
};

Status run_paged_attention(const CudaPagedAttentionArgs& a, bool allow_tensor_cores, DecodeMerge merge,
                           cudaStream_t stream) {
  CROSSPOINT_RETURN_IF_ERROR(check_paged_attention_args(a));
  if (a.num_tokens == 0) return Status::ok();

  Params p{};
  p.query = a.query;
  p.query_stride = a.query_stride;
  p.output = a.output;
  p.output_stride = a.output_stride;
  p.key_cache = a.key_cache;
  p.value_cache = a.value_cache;
  p.block_tables = a.block_tables;
  p.seq_token_start = a.seq_token_start;
  p.seq_context_len = a.seq_context_len;
  p.num_seqs = a.num_seqs;
  p.max_blocks_per_seq = a.max_blocks_per_seq;
  p.num_heads = a.num_heads;
  p.num_kv_heads = a.num_kv_heads;
  p.head_dim = a.head_dim;
  p.block_size = a.block_size;
  p.group_size = a.num_heads / a.num_kv_heads;
  p.head_chunks = (p.group_size + kHeadsPerCta - 1) / kHeadsPerCta;
  p.scale_log2 = a.scale * kLog2e;
  // Prefill sequences (>= kTensorCoreMinRows new rows) go to the tensor-core kernel when it
  // supports this head_dim and the output rows allow its 4-byte stores.
  const bool tensor_cores = allow_tensor_cores && prefill_tensor_core_supports(a.head_dim) &&
                            a.max_query_len >= kTensorCoreMinRows && a.output_stride % 2 == 0 &&
                            reinterpret_cast<uintptr_t>(a.output) % 4 == 0;
  p.tensor_core_min_rows = tensor_cores ? kTensorCoreMinRows : kNoTensorCoreRows;

  const int ctas_per_row = a.num_kv_heads * p.head_chunks;  // <= 65535 (check_paged_attention_args)
  const int bound = std::max(a.max_context_len, 1);
  const int64_t row_ctas = static_cast<int64_t>(a.num_tokens) * ctas_per_row;

  // Small batches (decode): one kernel whose clusters split each row's context and merge it.
  // A refused launch (no work enqueued) lowers the cap and tries again: 16 -> 8 -> two-kernel path.
  while (merge == DecodeMerge::kAuto) {
    const int cluster_ctas = cluster_ctas_for(row_ctas, bound, device_cluster_limit(a.head_dim));
    if (cluster_ctas <= 1) break;
    p.num_splits = 1;
    p.partition_tokens = 1 << 30;
    const dim3 grid(a.num_tokens, ctas_per_row, cluster_ctas);
    const cudaError_t err = a.head_dim == 128  ? launch_cluster_merge<16>(p, grid, stream)
                            : a.head_dim == 64 ? launch_cluster_merge<8>(p, grid, stream)
                                               : launch_cluster_merge<32>(p, grid, stream);
    if (err == cudaSuccess) {
      CROSSPOINT_RETURN_IF_ERROR(last_launch_status("paged_attention_split_kernel (cluster) launch"));
      if (tensor_cores) CROSSPOINT_RETURN_IF_ERROR(launch_prefill_tensor_core(p, a.max_query_len, stream));
      return Status::ok();
    }
    cudaGetLastError();  // a configuration error: nothing was launched, nothing is sticky
    g_cluster_cap.store(cluster_ctas > 8 ? 8 : 0, std::memory_order_relaxed);
  }

  const TwoPassPlan plan = plan_two_pass(a.num_tokens, ctas_per_row, bound, a.num_heads, a.head_dim, a.workspace,
                                       a.workspace_bytes);
  const int num_splits = plan.num_splits;
  p.partition_tokens = plan.partition_tokens;
  p.num_splits = num_splits;
  p.partial_out = static_cast<float*>(a.workspace);
  p.partial_ml = num_splits > 1 ? p.partial_out + static_cast<int64_t>(a.num_tokens) * a.num_heads * num_splits * a.head_dim
                                : nullptr;

  const dim3 grid(a.num_tokens, ctas_per_row, plan.grid_z);
  if (a.head_dim == 128) {
    CROSSPOINT_CUDA_RETURN_IF_ERROR(launch_programmatic(paged_attention_split_kernel<16, false>, dim3(grid), dim3(kThreads), 0, stream,
        p),
                                    "paged_attention_split_kernel launch");
  } else if (a.head_dim == 64) {
    CROSSPOINT_CUDA_RETURN_IF_ERROR(launch_programmatic(paged_attention_split_kernel<8, false>, dim3(grid), dim3(kThreads), 0, stream,
        p),
                                    "paged_attention_split_kernel launch");
  } else {
    CROSSPOINT_CUDA_RETURN_IF_ERROR(launch_programmatic(paged_attention_split_kernel<32, false>, dim3(grid), dim3(kThreads), 0, stream,
        p),
                                    "paged_attention_split_kernel launch");
  }
  CROSSPOINT_RETURN_IF_ERROR(last_launch_status("paged_attention_split_kernel launch"));
  if (num_splits > 1) {
    CROSSPOINT_CUDA_RETURN_IF_ERROR(launch_programmatic(paged_attention_merge_kernel, dim3(a.num_tokens, a.num_heads), dim3(kThreads), 0, stream,
        p),
                                    "paged_attention_merge_kernel launch");
    CROSSPOINT_RETURN_IF_ERROR(last_launch_status("paged_attention_merge_kernel launch"));
  }
  if (tensor_cores) CROSSPOINT_RETURN_IF_ERROR(launch_prefill_tensor_core(p, a.max_query_len, stream));
  return Status::ok();
}

}  // namespace


int cuda_paged_attention_device_cluster_limit(int head_dim) { return device_cluster_limit(head_dim); }

Status cuda_paged_attention(const CudaPagedAttentionArgs& args, cudaStream_t stream) {
  return run_paged_attention(args, /*allow_tensor_cores=*/true, DecodeMerge::kAuto, stream);
}

Status cuda_paged_attention_split_only(const CudaPagedAttentionArgs& args, cudaStream_t stream) {
  return run_paged_attention(args, /*allow_tensor_cores=*/false, DecodeMerge::kAuto, stream);
}

Status cuda_paged_attention_two_pass(const CudaPagedAttentionArgs& args, cudaStream_t stream) {
  return run_paged_attention(args, /*allow_tensor_cores=*/true, DecodeMerge::kTwoPass, stream);
}

}  // namespace crosspoint::cuda
