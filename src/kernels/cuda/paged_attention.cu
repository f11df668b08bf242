// Paged attention for a flat batch of prefill chunks and decodes (paged_attention.h): the
// split-context CUDA-core kernel, its merge kernel and the launcher. The launcher sends
// sequences with >= 16 new rows to the tensor-core prefill kernel (paged_attention_prefill.cu)
// and every other row to the tensor-core decode kernel (paged_attention_decode_mma.cu) when
// head_dim is 64 or 128 and a KV head has at most 16 query heads; the split kernel takes those
// rows otherwise, or when CudaAttentionKernels asks for it (tests, benchmarks).
//
// Workspace: [int32 merge counters of the decode kernel, kWorkspaceCounterBytes, zero between
// launches][f32 partial outputs][f32 (m, l)], the partials' layout set per launch.
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
//   * The grid depends only on host integers (num_tokens, heads, max_context_len), so a
//     captured graph stays valid; rows past seq_token_start[num_seqs], or partitions past a
//     row's visible length, exit at once.
// It handles every row when the tensor-core kernels cannot (other head dims, odd output
// strides) or are turned off (cuda_paged_attention_split_only): each prefill row then reads
// its own causal prefix (mostly from L2), correct for any chunk size but slow.
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>

#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/element16.cuh"
#include "kernels/cuda/programmatic_launch.cuh"
#include "kernels/cuda/paged_attention.h"
#include "kernels/cuda/paged_attention_params.cuh"

namespace crosspoint::cuda {
namespace {

using namespace attention_internal;

constexpr int kThreads = 128;          // 4 warps per CTA
constexpr int kHeadsPerCta = 8;        // query heads of one GQA group handled together
constexpr int kTileTokens = 64;        // context positions per online-softmax step
constexpr int kUnsplitCtas = 1024;     // ~8 CTAs per SM on a 132-SM H200: from here on, no context split
constexpr int kMaxSplits = 256;        // partitions per row (the partial-output stride)
constexpr int kMaxPartialRows = 4096;  // (row, partition) pairs the workspace holds at most
constexpr int kMaxHeadDim = 256;
constexpr int kTensorCoreMinRows = 16;  // a sequence with fewer new rows is cheaper on the split kernel

// The context range of one split; the last split runs to the end so that a context longer
// than the host bound is still attended in full (only slower).
__device__ __forceinline__ void split_range(const Params& p, int split, int visible, int* begin, int* end) {
  *begin = split * p.partition_tokens;
  *end = split == p.num_splits - 1 ? visible : min(visible, *begin + p.partition_tokens);
}

template <class E>
__device__ __forceinline__ void unpack8(const uint4& v, float* f) {
  const uint32_t words[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 x = E::to_float2(words[i]);
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

// kThreadsPerRow threads cover one K/V row of D elements (8 each; lanes past D idle):
// 16 for D = 128, 8 for D = 64, 32 for the generic path (any multiple of 8 up to 256).
// E: the query, output and 16-bit cache type; kFp8: the cache holds e4m3 bytes (Params::kv_fp8),
// read as fp16.
template <class E, int kThreadsPerRow, bool kFp8>
__global__ void __launch_bounds__(kThreads) paged_attention_split_kernel(Params p) {
  using CacheE = std::conditional_t<kFp8, Element16F16, E>;
  wait_for_prior_kernels();
  allow_dependent_launch();
  constexpr int kRowGroups = kThreads / kThreadsPerRow;            // rows in flight per step
  constexpr int kRowsPerThread = kTileTokens / kRowGroups;         // per tile
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

  const int s = sequence_of_row(p, t);
  if (s < 0 || num_new_rows(p, s) >= p.tensor_core_min_rows) return;  // padding, or the prefill kernel's
  const int visible = visible_length(p, s, t - p.seq_token_start[s]);
  if (static_cast<int64_t>(blockIdx.z) * p.partition_tokens >= visible) return;  // no partition of ours is visible

  const int lane_in_row = threadIdx.x % kThreadsPerRow;
  const int row_group = threadIdx.x / kThreadsPerRow;
  const int dim = lane_in_row * 8;
  const bool dim_valid = dim < p.head_dim;

  // q of the chunk's heads, pre-scaled into the log2 domain: [kHeadsPerCta][8] for this lane.
  float q[kHeadsPerCta][8];
#pragma unroll
  for (int h = 0; h < kHeadsPerCta; ++h) {
    uint4 raw = make_uint4(0, 0, 0, 0);
    if (h < num_heads_here && dim_valid)
      raw = *reinterpret_cast<const uint4*>(p.query + t * p.query_stride + (head_begin + h) * p.head_dim + dim);
    unpack8<E>(raw, q[h]);
#pragma unroll
    for (int e = 0; e < 8; ++e) q[h][e] *= p.scale_log2;
  }
  const int32_t* table = p.block_tables + static_cast<int64_t>(s) * p.max_blocks_per_seq;
  const int64_t kv_row_stride = static_cast<int64_t>(p.num_kv_heads) * p.head_dim;
  const int64_t kv_head_offset = static_cast<int64_t>(kv_head) * p.head_dim + dim;
  auto row_offset = [&](int position) {
    const int64_t slot = static_cast<int64_t>(table[position / p.block_size]) * p.block_size + position % p.block_size;
    return slot * kv_row_stride + kv_head_offset;
  };

  // The merge kernel reads only the partitions that start inside `visible`.
  for (int split = blockIdx.z; split < p.num_splits; split += gridDim.z) {
    int begin, end;
    split_range(p, split, visible, &begin, &end);
    if (begin >= end) break;
    if (threadIdx.x < kHeadsPerCta) {
      s_m[threadIdx.x] = -INFINITY;
      s_l[threadIdx.x] = 0.f;
    }
    float acc[kHeadsPerCta][8] = {};  // this row group's share of sum_p prob * V, dims dim..dim+7

    for (int tile = begin; tile < end; tile += kTileTokens) {
      // When a thread's V rows of the tile fit in one load batch, their loads are issued now, so
      // they are in flight during the score and softmax steps (one memory round trip per tile).
      uint4 v_early[kPrefetchV ? kRowsPerThread : 1];
      if constexpr (kPrefetchV) {
#pragma unroll
        for (int i = 0; i < kRowsPerThread; ++i) {
          const int position = tile + i * kRowGroups + row_group;
          v_early[i] = make_uint4(0, 0, 0, 0);
          if (position < end && dim_valid) v_early[i] = load_cache8<kFp8>(p.value_cache, row_offset(position));
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
          if (position < end && dim_valid) k_raw[i] = load_cache8<kFp8>(p.key_cache, row_offset(position));
        }
#pragma unroll
        for (int i = 0; i < kBatch; ++i) {
          float k[8];
          unpack8<CacheE>(k_raw[i], k);
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
        for (int offset = 16; offset > 0; offset /= 2)
          tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, offset));
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
            if (position < end && dim_valid) v_raw[i] = load_cache8<kFp8>(p.value_cache, row_offset(position));
          }
        }
#pragma unroll
        for (int i = 0; i < kBatch; ++i) {
          float v[8];
          unpack8<CacheE>(v_raw[i], v);
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

    // Sum the row groups' partial outputs: s_reduce[row_group][h][dim .. dim+7] as 2 float4.
#pragma unroll
    for (int h = 0; h < kHeadsPerCta; ++h) {
      const int base = ((row_group * kHeadsPerCta + h) * kThreadsPerRow + lane_in_row) * 2;
      s_reduce[base] = make_float4(acc[h][0], acc[h][1], acc[h][2], acc[h][3]);
      s_reduce[base + 1] = make_float4(acc[h][4], acc[h][5], acc[h][6], acc[h][7]);
    }
    __syncthreads();
    const float* reduce = reinterpret_cast<const float*>(s_reduce);
    constexpr int kRowFloats = kThreadsPerRow * 8;  // floats per (row_group, head) in s_reduce
    for (int idx = threadIdx.x; idx < num_heads_here * p.head_dim; idx += kThreads) {
      const int h = idx / p.head_dim, d = idx % p.head_dim;
      float sum = 0.f;
#pragma unroll
      for (int g = 0; g < kRowGroups; ++g) sum += reduce[(g * kHeadsPerCta + h) * kRowFloats + d];
      const float value = sum / s_l[h] * p.v_scale;
      const int head = head_begin + h;
      if (p.num_splits == 1) {
        p.output[t * p.output_stride + head * p.head_dim + d] = E::from_float(value);
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

// Merges the splits of one (row, head): weights l_i * 2^(m_i - max m), output = weighted mean
// of the normalised partials. Only splits that start inside the row's visible range exist.
template <class E>
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
    p.output[t * p.output_stride + head * p.head_dim + d] = E::from_float(sum * s_inv_total);
  }
}

// Context partition of the split kernel for a launch of num_tokens rows x ctas_per_row CTAs:
// 0 (no split) when the rows alone give the GPU enough CTAs, else finer partitions for
// smaller batches.
int partition_tokens_for(int num_tokens, int ctas_per_row) {
  const int64_t ctas = static_cast<int64_t>(num_tokens) * ctas_per_row;
  if (ctas >= kUnsplitCtas) return 0;
  if (ctas < 64) return kTileTokens;
  if (ctas < 256) return 2 * kTileTokens;
  return 4 * kTileTokens;
}

// Context partition of the tensor-core decode kernel for num_tokens x Hkv CTAs per split
// (up to 2 CTAs per SM: ~264 at once on a 132-SM H200). Unsplit from 512 (about two waves);
// below, partitions of 256, 128 or 64 positions (4, 2 or 1 tiles) so that a batch of one or a
// few rows still spreads over ~8 to 64 CTAs per (row, KV head) at long contexts.
constexpr int kDecodeTile = 64;
constexpr int kDecodeUnsplitCtas = 512;
static_assert(kDecodeUnsplitCtas <= kDecodeSplitCounters, "every split launch has its counters");
int decode_partition_tokens_for(int num_tokens, int num_kv_heads) {
  const int64_t ctas = static_cast<int64_t>(num_tokens) * num_kv_heads;
  if (ctas >= kDecodeUnsplitCtas) return 0;
  if (ctas < 64) return kDecodeTile;
  if (ctas < 256) return 2 * kDecodeTile;
  return 4 * kDecodeTile;
}

int64_t partial_bytes(int num_tokens, int num_heads, int num_splits, int head_dim) {
  return static_cast<int64_t>(num_tokens) * num_heads * num_splits * (head_dim + 2) *
         static_cast<int64_t>(sizeof(float));
}

Status bad(const std::string& what) { return invalid_argument("cuda_paged_attention: " + what); }

Status check_args(const CudaPagedAttentionArgs& a) {
  if (a.num_seqs < 0 || a.num_tokens < 0)
    return bad("num_seqs " + std::to_string(a.num_seqs) + " and num_tokens " + std::to_string(a.num_tokens) +
               " must be >= 0");
  if (a.num_heads <= 0 || a.num_kv_heads <= 0 || a.num_heads % a.num_kv_heads != 0)
    return bad("num_heads " + std::to_string(a.num_heads) + " must be a positive multiple of num_kv_heads " +
               std::to_string(a.num_kv_heads));
  if (a.head_dim < 8 || a.head_dim > kMaxHeadDim || a.head_dim % 8 != 0)
    return bad("head_dim " + std::to_string(a.head_dim) + " must be a multiple of 8 in [8, 256]");
  if (a.block_size <= 0) return bad("block_size " + std::to_string(a.block_size) + " must be positive");
  if (a.max_blocks_per_seq <= 0) return bad("max_blocks_per_seq must be positive");
  if (a.max_query_len < 0 || a.max_context_len < 0) return bad("max_query_len and max_context_len must be >= 0");
  if (!(a.scale > 0.f) || !std::isfinite(a.scale)) return bad("scale must be positive and finite");
  const int64_t row_width = static_cast<int64_t>(a.num_heads) * a.head_dim;
  if (a.query_stride < row_width || a.query_stride % 8 != 0)
    return bad("query_stride " + std::to_string(a.query_stride) + " must be >= H * D and a multiple of 8");
  if (a.output_stride < row_width) return bad("output_stride " + std::to_string(a.output_stride) + " < H * D");
  if (!is_element16(a.dtype)) return bad("dtype must be float16 or bfloat16");
  if (a.num_tokens == 0) return Status::ok();
  const bool fp16_cache = a.key_cache != nullptr && a.value_cache != nullptr;
  const bool fp8_cache = a.key_cache_fp8 != nullptr && a.value_cache_fp8 != nullptr;
  if (!a.query || !a.output || !a.block_tables || !a.seq_token_start || !a.seq_context_len)
    return bad("null query, output or table pointer");
  if (fp16_cache == fp8_cache || (a.key_cache && a.key_cache_fp8) || (a.value_cache && a.value_cache_fp8))
    return bad(
        "exactly one cache pair must be set: key_cache and value_cache (fp16) or key_cache_fp8 and value_cache_fp8");
  if (fp8_cache && !(a.k_scale > 0.f && a.v_scale > 0.f && std::isfinite(a.k_scale) && std::isfinite(a.v_scale)))
    return bad("the fp8 cache's k_scale and v_scale must be positive and finite");
  if (fp8_cache && a.dtype != DType::kF16) return bad("an fp8 cache is read with float16 queries only");
  if (a.num_seqs == 0) return bad("num_tokens > 0 but num_seqs == 0");
  auto aligned16 = [](const void* ptr) { return reinterpret_cast<uintptr_t>(ptr) % 16 == 0; };
  const void* key = fp8_cache ? static_cast<const void*>(a.key_cache_fp8) : a.key_cache;
  const void* value = fp8_cache ? static_cast<const void*>(a.value_cache_fp8) : a.value_cache;
  if (!aligned16(a.query) || !aligned16(key) || !aligned16(value))
    return bad("query and the caches must be 16-byte aligned");
  return Status::ok();
}

// Partials start after the decode kernel's counters (kept zero between launches, whichever
// kernel runs): [int32 counters, kWorkspaceCounterBytes][f32 partial_out][f32 partial_ml].
int64_t workspace_partial_bytes(const CudaPagedAttentionArgs& a) {
  if (a.workspace == nullptr || a.workspace_bytes <= kWorkspaceCounterBytes) return 0;
  return static_cast<int64_t>(a.workspace_bytes - kWorkspaceCounterBytes);
}

// Fills p's split fields for a context partition of `partition` tokens (0: none) within the
// workspace: longer partitions when the workspace holds fewer (a smaller workspace costs
// speed, never correctness; none at all means one split). `tile` divides every partition.
void plan_splits(const CudaPagedAttentionArgs& a, int partition, int tile, int max_splits_allowed, Params* p) {
  const int bound = std::max(a.max_context_len, 1);
  int num_splits = partition > 0 ? (bound + partition - 1) / partition : 1;
  const int64_t bytes_per_split = partial_bytes(a.num_tokens, a.num_heads, 1, a.head_dim);
  const int64_t max_splits = std::min<int64_t>(max_splits_allowed, workspace_partial_bytes(a) / bytes_per_split);
  if (num_splits > max_splits && max_splits > 1) {
    const int per_split = (bound + static_cast<int>(max_splits) - 1) / static_cast<int>(max_splits);
    partition = (per_split + tile - 1) / tile * tile;
    num_splits = (bound + partition - 1) / partition;
  }
  if (num_splits <= 1 || max_splits <= 1) {
    num_splits = 1;
    partition = 1 << 30;  // one split covers any context
  }
  p->num_splits = num_splits;
  p->partition_tokens = partition;
  char* base = static_cast<char*>(a.workspace);
  p->split_counters = num_splits > 1 ? reinterpret_cast<int*>(base) : nullptr;
  p->partial_out = num_splits > 1 ? reinterpret_cast<float*>(base + kWorkspaceCounterBytes) : nullptr;
  p->partial_ml = num_splits > 1
                      ? p->partial_out + static_cast<int64_t>(a.num_tokens) * a.num_heads * num_splits * a.head_dim
                      : nullptr;
}

Status launch_split(const CudaPagedAttentionArgs& a, Params p, cudaStream_t stream) {
  p.head_chunks = (p.group_size + kHeadsPerCta - 1) / kHeadsPerCta;
  const int ctas_per_row = a.num_kv_heads * p.head_chunks;
  plan_splits(a, a.batch_invariant ? 0 : partition_tokens_for(a.num_tokens, ctas_per_row), kTileTokens, kMaxSplits, &p);
  // CTAs per (row, KV head): enough for ~kUnsplitCtas in all; each walks every grid_z-th partition.
  const int64_t row_ctas = static_cast<int64_t>(a.num_tokens) * ctas_per_row;
  const int grid_z = static_cast<int>(std::min<int64_t>(p.num_splits, (kUnsplitCtas + row_ctas - 1) / row_ctas));
  const dim3 grid(a.num_tokens, ctas_per_row, std::max(grid_z, 1));
  if (grid.y > 65535) return bad("num_kv_heads x head chunks exceeds the grid limit");
  const auto kernel = [&] {
    if (p.bf16) {  // never with an fp8 cache (check_args)
      using E = Element16BF16;
      if (a.head_dim == 128) return paged_attention_split_kernel<E, 16, false>;
      if (a.head_dim == 64) return paged_attention_split_kernel<E, 8, false>;
      return paged_attention_split_kernel<E, 32, false>;
    }
    using E = Element16F16;
    if (a.head_dim == 128)
      return p.kv_fp8 ? paged_attention_split_kernel<E, 16, true> : paged_attention_split_kernel<E, 16, false>;
    if (a.head_dim == 64)
      return p.kv_fp8 ? paged_attention_split_kernel<E, 8, true> : paged_attention_split_kernel<E, 8, false>;
    return p.kv_fp8 ? paged_attention_split_kernel<E, 32, true> : paged_attention_split_kernel<E, 32, false>;
  }();
  CROSSPOINT_CUDA_RETURN_IF_ERROR(launch_programmatic(kernel, grid, dim3(kThreads), 0, stream, p),
                                  "paged_attention_split_kernel launch");
  CROSSPOINT_RETURN_IF_ERROR(last_launch_status("paged_attention_split_kernel launch"));
  if (p.num_splits > 1) {
    CROSSPOINT_CUDA_RETURN_IF_ERROR(launch_programmatic(p.bf16 ? paged_attention_merge_kernel<Element16BF16>
                                                               : paged_attention_merge_kernel<Element16F16>,
                                                        dim3(a.num_tokens, a.num_heads), dim3(kThreads), 0, stream, p),
                                    "paged_attention_merge_kernel launch");
    CROSSPOINT_RETURN_IF_ERROR(last_launch_status("paged_attention_merge_kernel launch"));
  }
  return Status::ok();
}

// The partitioned decode kernel (one partition per (row, KV head) in batch-invariant mode, where
// a row's reduction order must not depend on the other rows), the balanced one where the
// workspace holds its slots, or the cluster one on sm_90+.
Status launch_decode(const CudaPagedAttentionArgs& a, Params p, DecodeForm form, cudaStream_t stream) {
  if (a.batch_invariant || (form == DecodeForm::kCluster && !decode_cluster_supported()) ||
      (form == DecodeForm::kBalanced &&
       workspace_partial_bytes(a) < decode_balanced_partial_bytes(p.group_size, a.head_dim)))
    form = DecodeForm::kPartitioned;
  if (form == DecodeForm::kCluster) {
    p.num_splits = 1;
    p.partition_tokens = 1 << 30;
  } else if (form == DecodeForm::kPartitioned) {
    plan_splits(a, a.batch_invariant ? 0 : decode_partition_tokens_for(a.num_tokens, a.num_kv_heads), kDecodeTile,
                kMaxDecodeSplits, &p);
  } else {
    p.num_splits = 1;
    p.partition_tokens = 1 << 30;
    char* base = static_cast<char*>(a.workspace);
    p.split_counters = reinterpret_cast<int*>(base);
    p.partial_out = reinterpret_cast<float*>(base + kWorkspaceCounterBytes);
    p.partial_ml = p.partial_out + static_cast<int64_t>(kMaxDecodeCtas) * 2 * p.group_size * a.head_dim;
  }
  return launch_decode_tensor_core(p, a.num_tokens, form, stream);
}

// Where the balanced decode kernel measured faster than the partitioned one on the H200 (28
// query / 4 KV heads, head_dim 128): 10 to 100 rows once the
// context bound reaches 512, and 4 to 9 rows once it reaches 2,048; the partitioned kernel
// keeps 1 to 3 rows, short bounds, and 128 rows or more.
bool balanced_decode_pays(const CudaPagedAttentionArgs& a) {
  if (a.num_tokens >= 128 || a.max_context_len < 512) return false;
  return a.num_tokens >= 10 || (a.num_tokens >= 4 && a.max_context_len >= 2048);
}

// Where the cluster decode kernel takes the decode rows by default: batches of up to 4 rows,
// where it measured faster than both other forms at contexts 512 and 4,096 under a 4,096 bound
// (at 8 rows the balanced kernel kept the decode step faster; docs/log/cuda.md, 2026-12-06).
bool cluster_decode_pays(const CudaPagedAttentionArgs& a) { return a.num_tokens <= 4; }

}  // namespace

size_t cuda_paged_attention_workspace_bytes(int max_num_tokens, int num_heads, int head_dim, int max_context_len) {
  if (max_num_tokens <= 0 || num_heads <= 0 || head_dim <= 0) return 0;
  // At most ceil(context / one tile) partitions per row, and never more (row, partition)
  // pairs than kMaxPartialRows: a launch that would need more uses longer partitions.
  const int64_t max_splits =
      std::min<int64_t>(kMaxSplits, (std::max(max_context_len, 1) + kTileTokens - 1) / kTileTokens);
  if (max_splits <= 1) return 0;
  const int64_t split_rows = std::min<int64_t>(static_cast<int64_t>(max_num_tokens) * max_splits, kMaxPartialRows);
  const int64_t split_kernel_bytes = split_rows * num_heads * (head_dim + 2) * static_cast<int64_t>(sizeof(float));
  // The balanced decode kernel's slots, for up to kMaxDecodeGroup query heads per KV head.
  const int64_t decode_bytes = decode_balanced_partial_bytes(std::min(num_heads, kMaxDecodeGroup), head_dim);
  return kWorkspaceCounterBytes + static_cast<size_t>(std::max(split_kernel_bytes, decode_bytes));
}

size_t cuda_paged_attention_workspace_counter_bytes() { return kWorkspaceCounterBytes; }

Status cuda_paged_attention_with(const CudaPagedAttentionArgs& a, CudaAttentionKernels kernels, cudaStream_t stream) {
  CROSSPOINT_RETURN_IF_ERROR(check_args(a));
  if (a.num_tokens == 0) return Status::ok();

  Params p{};
  p.query = a.query;
  p.query_stride = a.query_stride;
  p.output = a.output;
  p.output_stride = a.output_stride;
  p.kv_fp8 = a.key_cache_fp8 != nullptr;
  p.bf16 = a.dtype == DType::kBF16;
  p.key_cache = p.kv_fp8 ? static_cast<const void*>(a.key_cache_fp8) : a.key_cache;
  p.value_cache = p.kv_fp8 ? static_cast<const void*>(a.value_cache_fp8) : a.value_cache;
  p.v_scale = p.kv_fp8 ? a.v_scale : 1.0f;
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
  p.scale_log2 = a.scale * kLog2e * (p.kv_fp8 ? a.k_scale : 1.0f);  // q . (k_scale e4m3) = k_scale (q . e4m3)
  // Prefill sequences (>= kTensorCoreMinRows new rows) go to the tensor-core prefill kernel
  // when it supports this head_dim and the output rows allow its 4-byte stores.
  if (a.batch_invariant && kernels == CudaAttentionKernels::kDefault) kernels = CudaAttentionKernels::kDecodeOnly;
  const bool prefill_kernel =
      (kernels == CudaAttentionKernels::kDefault || kernels == CudaAttentionKernels::kSplitDecode ||
       kernels == CudaAttentionKernels::kBalancedDecode || kernels == CudaAttentionKernels::kPartitionedDecode ||
       kernels == CudaAttentionKernels::kClusterDecode) &&
      prefill_tensor_core_supports(a.head_dim) && a.max_query_len >= kTensorCoreMinRows && a.output_stride % 2 == 0 &&
      reinterpret_cast<uintptr_t>(a.output) % 4 == 0;
  p.tensor_core_min_rows = prefill_kernel ? kTensorCoreMinRows : kNoTensorCoreRows;
  // The other rows: the tensor-core decode kernel where it applies, else the split kernel.
  const bool decode_kernel =
      (kernels == CudaAttentionKernels::kDefault || kernels == CudaAttentionKernels::kDecodeOnly ||
       kernels == CudaAttentionKernels::kBalancedDecode || kernels == CudaAttentionKernels::kPartitionedDecode ||
       kernels == CudaAttentionKernels::kClusterDecode) &&
      decode_tensor_core_supports(a.head_dim, p.group_size);
  const DecodeForm form = [&] {
    switch (kernels) {
      case CudaAttentionKernels::kBalancedDecode: return DecodeForm::kBalanced;
      case CudaAttentionKernels::kClusterDecode: return DecodeForm::kCluster;
      case CudaAttentionKernels::kDefault:
        if (cluster_decode_pays(a)) return DecodeForm::kCluster;
        return balanced_decode_pays(a) ? DecodeForm::kBalanced : DecodeForm::kPartitioned;
      default: return DecodeForm::kPartitioned;
    }
  }();
  CROSSPOINT_RETURN_IF_ERROR(decode_kernel ? launch_decode(a, p, form, stream) : launch_split(a, p, stream));
  if (prefill_kernel) CROSSPOINT_RETURN_IF_ERROR(launch_prefill_tensor_core(p, a.max_query_len, stream));
  return Status::ok();
}

Status cuda_paged_attention(const CudaPagedAttentionArgs& args, cudaStream_t stream) {
  return cuda_paged_attention_with(args, CudaAttentionKernels::kDefault, stream);
}

Status cuda_paged_attention_split_only(const CudaPagedAttentionArgs& args, cudaStream_t stream) {
  return cuda_paged_attention_with(args, CudaAttentionKernels::kSplitOnly, stream);
}

}  // namespace crosspoint::cuda
