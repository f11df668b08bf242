// Internal to paged_attention*.cu: the launch parameters both attention kernels read and the
// device helpers that map a query row to its sequence and causal range. Not a public API.
//
// Which kernel owns a row: sequences with at least tensor_core_min_rows new rows go to the
// tensor-core prefill kernel (paged_attention_prefill.cu); every other row to the tensor-core
// decode kernel (paged_attention_decode_mma.cu) or, where it does not apply or is switched
// off, the split-context CUDA-core kernel (paged_attention.cu). They decide from the same
// device data, so each row is written by exactly one of them.
#pragma once

#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "common/status.h"

namespace crosspoint::cuda::attention_internal {

constexpr float kLog2e = 1.4426950408889634f;
constexpr int kNoTensorCoreRows = 1 << 30;  // tensor_core_min_rows when that path is off
// The decode kernels' fused merges share int32 ticket counters at the start of the workspace:
// the partitioned kernel one per (row, KV head) (launches with num_tokens x Hkv <=
// kDecodeSplitCounters; larger ones never split; at most kMaxDecodeSplits partitions per row),
// the balanced kernel one per CTA (kMaxDecodeCtas at most, one wave) with two partial slots
// per CTA (kMaxDecodeGroup rows of head_dim + 2 floats each) after them.
constexpr int kMaxDecodeSplits = 256;
constexpr int kMaxDecodeCtas = 512;
constexpr int kMaxDecodePieces = kMaxDecodeCtas;  // CTAs that share one (row, KV head) at most
constexpr int kMaxDecodeGroup = 16;               // query heads per KV head on the decode kernel
constexpr int kDecodeSplitCounters = 1024;
static_assert(kMaxDecodeCtas <= kDecodeSplitCounters, "a counter per balanced CTA");
constexpr size_t kWorkspaceCounterBytes = kDecodeSplitCounters * sizeof(int32_t);

struct Params {
  const uint16_t* query;  // [T, H, D] fp16, rows query_stride apart
  int64_t query_stride;
  uint16_t* output;  // [T, H, D] fp16, rows output_stride apart
  int64_t output_stride;
  const void* key_cache;           // [num_blocks, block_size, Hkv, D] fp16, or e4m3 bytes (kv_fp8)
  const void* value_cache;         // same layout and type
  bool kv_fp8;                     // e4m3 cache: k_scale is folded into scale_log2, v_scale scales the output
  bool bf16;                       // query, output and 16-bit cache in bf16 (never with kv_fp8)
  float v_scale;                   // 1 for an fp16 cache
  const int32_t* block_tables;     // [num_seqs, max_blocks_per_seq]
  const int32_t* seq_token_start;  // [num_seqs + 1]
  const int32_t* seq_context_len;  // [num_seqs]
  int num_seqs, max_blocks_per_seq;
  int num_heads, num_kv_heads, head_dim, block_size;
  int group_size;            // H / Hkv
  int head_chunks;           // split kernel: ceil(group_size / heads per CTA)
  float scale_log2;          // scale * log2(e): scores in the log2 domain, exp2f everywhere
  int num_splits;            // split or partitioned decode kernel: 1 = direct output; > 1 = partials, then merge
  int partition_tokens;      // P, a multiple of the kernel's tile (huge when num_splits == 1)
  float* partial_out;        // [T, H, num_splits, D] (balanced decode: [CTA][2][group][D]) f32, each
                             // normalised by its own l
  float* partial_ml;         // the same slots' (m in log2 units, l), f32
  int* split_counters;       // decode kernels: [kDecodeSplitCounters] tickets, zero between launches
  int tensor_core_min_rows;  // sequences with this many new rows or more: prefill kernel
};

// The sequence that owns query row t (largest s with seq_token_start[s] <= t), or -1 for a
// padding row past seq_token_start[num_seqs]. Tries s = t first (a decode batch: one row per
// sequence), whose loads go out together, before a binary search of dependent loads.
__device__ __forceinline__ int sequence_of_row(const Params& p, int t) {
  const int guess = min(t, p.num_seqs - 1);
  const int num_rows = p.seq_token_start[p.num_seqs];
  const int guess_start = p.seq_token_start[guess], guess_end = p.seq_token_start[guess + 1];
  if (t >= num_rows) return -1;
  if (guess_start <= t && t < guess_end) return guess;
  int lo = 0, hi = p.num_seqs;  // seq_token_start[lo] <= t < seq_token_start[hi]
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    if (p.seq_token_start[mid] <= t) lo = mid;
    else hi = mid;
  }
  return lo;
}

__device__ __forceinline__ int num_new_rows(const Params& p, int s) {
  return p.seq_token_start[s + 1] - p.seq_token_start[s];
}

// Positions 0 .. visible-1 that new row j of sequence s attends to (the header's causal rule).
__device__ __forceinline__ int visible_length(const Params& p, int s, int j) {
  return p.seq_context_len[s] - num_new_rows(p, s) + j + 1;
}

// Two e4m3 bytes (the lower one first) widened to an fp16 pair in the same order. Exact: every
// e4m3 value is an fp16 value.
__device__ __forceinline__ uint32_t widen_e4m3x2(uint32_t two_bytes) {
  const __half2_raw h = __nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(two_bytes), __NV_E4M3);
  return static_cast<uint32_t>(h.x) | (static_cast<uint32_t>(h.y) << 16);
}

// Eight consecutive cache elements from element `offset` of K or V, as eight fp16 in a uint4:
// an fp16 cache's 16 bytes as stored, an e4m3 cache's 8 bytes widened (its scales are applied
// outside: Params::kv_fp8).
template <bool kFp8>
__device__ __forceinline__ uint4 load_cache8(const void* cache, int64_t offset) {
  if constexpr (kFp8) {
    const uint2 raw = *reinterpret_cast<const uint2*>(static_cast<const uint8_t*>(cache) + offset);
    return make_uint4(widen_e4m3x2(raw.x & 0xffffu), widen_e4m3x2(raw.x >> 16), widen_e4m3x2(raw.y & 0xffffu),
                      widen_e4m3x2(raw.y >> 16));
  } else {
    return *reinterpret_cast<const uint4*>(static_cast<const uint16_t*>(cache) + offset);
  }
}

// Physical cache row of (sequence table, position): offset of its [Hkv, D] slice, in elements.
__device__ __forceinline__ int64_t cache_row_offset(const Params& p, const int32_t* table, int position) {
  const int64_t slot = static_cast<int64_t>(table[position / p.block_size]) * p.block_size + position % p.block_size;
  return slot * p.num_kv_heads * p.head_dim;
}

// Tensor-core prefill kernel for head_dim 64 or 128 (paged_attention_prefill.cu): grid
// (num_seqs * ceil(max_query_len / 64), H); rows of shorter sequences are left alone.
bool prefill_tensor_core_supports(int head_dim);
// Tensor-core decode kernel for head_dim 64 or 128 and 1..16 query heads per KV head
// (paged_attention_decode_mma.cu); it takes the rows the prefill kernel leaves, in one of three
// forms:
enum class DecodeForm {
  kPartitioned,  // grid (num_tokens, Hkv, num_splits) over partitions of partition_tokens;
                 // num_tokens x Hkv <= kDecodeSplitCounters when num_splits > 1
  kBalanced,     // one wave of CTAs with equal shares of the rows' tiles (partial_out / partial_ml /
                 // split_counters holding decode_balanced_partial_bytes, else it falls back)
  kCluster,      // a cluster of 8 CTAs per (row, KV head) merging in distributed shared memory
                 // (sm_90+: decode_cluster_supported(); no workspace)
};
bool decode_tensor_core_supports(int head_dim, int group_size);
bool decode_cluster_supported();
Status launch_decode_tensor_core(const Params& p, int num_tokens, DecodeForm form, cudaStream_t stream);
// Partial-slot bytes the balanced decode kernel needs after the counters.
inline int64_t decode_balanced_partial_bytes(int group_size, int head_dim) {
  return static_cast<int64_t>(kMaxDecodeCtas) * 2 * group_size * (head_dim + 2) * static_cast<int64_t>(sizeof(float));
}
Status launch_prefill_tensor_core(const Params& p, int max_query_len, cudaStream_t stream);

}  // namespace crosspoint::cuda::attention_internal
