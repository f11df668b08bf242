// sample_rows of sampling.h: one 1024-thread block per sampled row. Thread t owns the
// contiguous ids [t * chunk, (t + 1) * chunk), so per-thread sums followed by one block scan
// are sums in id order, which the tie and draw steps need. Every count and weight is an
// integer (sampling_reference.h), so the results equal the host reference's whatever order
// the atomics land in. Rows are read with 16-byte loads when the row stride and pointer allow
// (kVec), and W is not computed (no exp) for logits more than 33 temperatures below the max,
// where it rounds to 0 anyway: for real LLM rows that is most of the vocabulary.
#include <cuda_fp16.h>

#include <cstdint>
#include <string>

#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/element16.cuh"
#include "kernels/cuda/sampling.h"

namespace crosspoint::cuda {
namespace {

constexpr int kThreads = 1024;  // one block per row; 32 warps
constexpr int kWarps = kThreads / 32;
constexpr unsigned kFullMask = 0xffffffffu;

// Shared state of one row's block.
struct RowShared {
  uint32_t count_hi[256];    // candidates per high byte of the key (pass 1)
  uint32_t count_lo[256];    // candidates per low byte inside one high-byte bin
  uint64_t weight_bin[256];  // W per high-byte bin (top-p), then W per low byte
  uint64_t weight_lo[256];   // W of one candidate per low byte (top-p)
  uint64_t warp_u64[kWarps];
  uint32_t warp_u32[kWarps];
  uint64_t total_u64;
  uint32_t total_u32;
  // Broadcast values.
  uint32_t max_key;
  uint32_t cut_key;  // kept: key > cut_key, or key == cut_key and id <= cut_last_id
  int32_t cut_last_id;
  uint32_t bin;    // the high-byte bin being split
  uint64_t above;  // count or W above the bin being split
  int64_t need;    // ties needed at the cut key (0 = all that are kept)
  int32_t nth_result;
  int32_t owner;          // thread whose id range holds the draw
  uint64_t owner_before;  // W before that range
  int32_t token;
};

__device__ __forceinline__ float key_to_float(uint32_t key, bool bf16) {
  const uint16_t bits = sampling_key_bits(key);
  return bf16 ? Element16BF16::to_float(bits) : Element16F16::to_float(bits);
}

template <typename T>
__device__ __forceinline__ T warp_inclusive_scan(T v) {
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int offset = 1; offset < 32; offset *= 2) {
    const T other = __shfl_up_sync(kFullMask, v, offset);
    if (lane >= offset) v += other;
  }
  return v;
}

// Exclusive prefix over the block in thread order; *total gets the block's sum.
template <typename T>
__device__ T block_exclusive_scan(T v, T* warp_sums, T* total_slot, T* total) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const T inclusive = warp_inclusive_scan(v);
  if (lane == 31) warp_sums[warp] = inclusive;
  __syncthreads();
  if (warp == 0) {
    const T w = warp_sums[lane];
    const T w_inclusive = warp_inclusive_scan(w);
    warp_sums[lane] = w_inclusive - w;
    if (lane == 31) *total_slot = w_inclusive;
  }
  __syncthreads();
  const T result = warp_sums[warp] + inclusive - v;
  *total = *total_slot;
  __syncthreads();  // warp_sums and the total slot may be reused right after
  return result;
}

__device__ uint32_t block_max(uint32_t v, RowShared& s) {
  v = __reduce_max_sync(kFullMask, v);
  if ((threadIdx.x & 31) == 0) s.warp_u32[threadIdx.x >> 5] = v;
  __syncthreads();
  if (threadIdx.x < 32) {
    const uint32_t m = __reduce_max_sync(kFullMask, s.warp_u32[threadIdx.x]);
    if (threadIdx.x == 0) s.total_u32 = m;
  }
  __syncthreads();
  const uint32_t result = s.total_u32;
  __syncthreads();
  return result;
}

struct RowView {
  const uint16_t* row;  // [vocab] fp16, or bf16
  bool bf16;
  int begin, end;  // this thread's ids; begin is a multiple of 8
  float max_logit;
  float temperature;
  float zero_below;  // logit - max below this: W is 0 (exp(-32.99) * 2^44 < 0.5), no exp needed
};

// f(id, key) for every candidate of [v.begin, v.end) in id order; kVec: 16-byte loads (the
// row is 16-byte aligned and v.begin a multiple of 8), the tail one by one.
template <bool kVec, typename F>
__device__ __forceinline__ void for_each_candidate(const RowView& v, F&& f) {
  int i = v.begin;
  if constexpr (kVec) {
    for (; i + 8 <= v.end; i += 8) {
      const uint4 packed = *reinterpret_cast<const uint4*>(v.row + i);
      const uint16_t* h = reinterpret_cast<const uint16_t*>(&packed);
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        uint32_t key;
        if (sampling_order_key(h[j], &key, v.bf16)) f(i + j, key);
      }
    }
  }
  for (; i < v.end; ++i) {
    uint32_t key;
    if (sampling_order_key(v.row[i], &key, v.bf16)) f(i, key);
  }
}

// W of a candidate (sampling_reference.h), skipping the exp where it must round to 0.
__device__ __forceinline__ uint64_t weight_of(uint32_t key, const RowView& v) {
  const float logit = key_to_float(key, v.bf16);
  if (logit - v.max_logit < v.zero_below) return 0;
  return sampling_weight(logit, v.max_logit, v.temperature);
}

// Id of the n-th (1-based) candidate with `key` in id order (n <= their count).
template <bool kVec>
__device__ int32_t nth_id_with_key(const RowView& v, uint32_t key, int64_t n, RowShared& s) {
  uint32_t mine = 0;
  for_each_candidate<kVec>(v, [&](int, uint32_t k) { mine += k == key; });
  uint32_t total;
  const uint32_t before = block_exclusive_scan(mine, s.warp_u32, &s.total_u32, &total);
  if (mine > 0 && before < n && n <= before + mine) {
    int64_t left = n - before;
    for (int i = v.begin; i < v.end; ++i) {
      uint32_t k;
      if (sampling_order_key(v.row[i], &k, v.bf16) && k == key && --left == 0) {
        s.nth_result = i;
        break;
      }
    }
  }
  __syncthreads();
  const int32_t result = s.nth_result;
  __syncthreads();
  return result;
}

__device__ __forceinline__ bool is_kept(uint32_t key, int id, const RowShared& s) {
  return key > s.cut_key || (key == s.cut_key && id <= s.cut_last_id);
}

template <bool kVec>
__global__ void __launch_bounds__(kThreads)
    sample_rows_kernel(const uint16_t* __restrict__ logits, int64_t stride, int num_logits_rows,
                       const SampledRowParams* __restrict__ row_params, int32_t* __restrict__ out_tokens, int vocab,
                       bool bf16) {
  __shared__ RowShared s;
  const SampledRowParams p = sampling_effective_params(row_params[blockIdx.x]);
  if (p.logits_row < 0 || p.logits_row >= num_logits_rows) return;  // whole block leaves together
  const int tid = threadIdx.x;
  const int chunk = ((vocab + kThreads - 1) / kThreads + 7) / 8 * 8;  // a multiple of 8
  RowView v;
  v.row = logits + static_cast<int64_t>(p.logits_row) * stride;
  v.bf16 = bf16;
  v.begin = min(vocab, tid * chunk);
  v.end = min(vocab, v.begin + chunk);
  v.temperature = p.temperature;
  v.zero_below = -33.0f * p.temperature;

  // Pass 1: max key, candidates, high-byte histogram.
  for (int b = tid; b < 256; b += kThreads) s.count_hi[b] = 0;
  __syncthreads();
  // Only top-k reads the histogram: rows without it skip the shared-memory atomics.
  const bool top_k_possible = p.top_k > 0 && p.top_k < vocab;
  uint32_t my_max = 0, my_count = 0;
  for_each_candidate<kVec>(v, [&](int, uint32_t key) {
    my_max = max(my_max, key);
    ++my_count;
    if (top_k_possible) atomicAdd(&s.count_hi[key >> 8], 1u);
  });
  uint32_t num_candidates;
  (void)block_exclusive_scan(my_count, s.warp_u32, &s.total_u32, &num_candidates);
  if (num_candidates == 0) {
    if (tid == 0) out_tokens[p.logits_row] = 0;
    return;
  }
  const uint32_t max_key = block_max(my_max, s);
  v.max_logit = key_to_float(max_key, bf16);
  if (tid == 0) {
    s.cut_key = 0;  // key 0 is NaN's, never a candidate: everything kept
    s.cut_last_id = vocab - 1;
  }
  __syncthreads();

  // Top-k: radix select over the two key bytes.
  if (top_k_possible && static_cast<uint32_t>(p.top_k) < num_candidates) {
    if (tid == 0) {
      uint64_t above = 0;
      for (int b = static_cast<int>(max_key >> 8); b >= 0; --b) {
        if (above + s.count_hi[b] >= static_cast<uint64_t>(p.top_k)) {
          s.bin = b;
          break;
        }
        above += s.count_hi[b];
      }
      s.above = above;
    }
    for (int b = tid; b < 256; b += kThreads) s.count_lo[b] = 0;
    __syncthreads();
    const uint32_t bin = s.bin;
    for_each_candidate<kVec>(v, [&](int, uint32_t key) {
      if ((key >> 8) == bin) atomicAdd(&s.count_lo[key & 255], 1u);
    });
    __syncthreads();
    if (tid == 0) {
      uint64_t above = s.above;
      for (int lo = 255; lo >= 0; --lo) {
        if (above + s.count_lo[lo] >= static_cast<uint64_t>(p.top_k)) {
          s.cut_key = (s.bin << 8) | lo;
          const int64_t need = p.top_k - static_cast<int64_t>(above);
          s.need = need < s.count_lo[lo] ? need : 0;
          break;
        }
        above += s.count_lo[lo];
      }
    }
    __syncthreads();
    if (s.need > 0) {
      const int32_t last = nth_id_with_key<kVec>(v, s.cut_key, s.need, s);
      if (tid == 0) s.cut_last_id = last;
    }
    __syncthreads();
  }

  // Top-p over the top-k set: W per high-byte bin, then split the bin reaching the target.
  if (p.top_p < 1.0f) {
    for (int b = tid; b < 256; b += kThreads) s.weight_bin[b] = 0;
    __syncthreads();
    uint64_t my_weight = 0;
    for_each_candidate<kVec>(v, [&](int i, uint32_t key) {
      if (!is_kept(key, i, s)) return;
      const uint64_t w = weight_of(key, v);
      if (w == 0) return;
      my_weight += w;
      atomicAdd(reinterpret_cast<unsigned long long*>(&s.weight_bin[key >> 8]), static_cast<unsigned long long>(w));
    });
    uint64_t kept_weight;
    (void)block_exclusive_scan(my_weight, s.warp_u64, &s.total_u64, &kept_weight);
    const uint64_t target = sampling_top_p_target(kept_weight, p.top_p);
    if (tid == 0) {
      uint64_t above = 0;
      for (int b = static_cast<int>(max_key >> 8); b >= 0; --b) {
        if (above + s.weight_bin[b] >= target) {
          s.bin = b;
          break;
        }
        above += s.weight_bin[b];
      }
      s.above = above;
    }
    for (int b = tid; b < 256; b += kThreads) s.count_lo[b] = 0;
    __syncthreads();
    const uint32_t bin = s.bin;
    for_each_candidate<kVec>(v, [&](int i, uint32_t key) {
      if ((key >> 8) == bin && is_kept(key, i, s)) atomicAdd(&s.count_lo[key & 255], 1u);
    });
    __syncthreads();
    if (tid < 256) {  // one weight per key of the bin, computed in parallel
      const uint64_t w = s.count_lo[tid] > 0 ? weight_of((s.bin << 8) | tid, v) : 0;
      s.weight_lo[tid] = w;
      s.weight_bin[tid] = w * s.count_lo[tid];
    }
    __syncthreads();
    if (tid == 0) {
      uint64_t above = s.above;
      s.need = 0;
      for (int lo = 255; lo >= 0; --lo) {
        if (s.count_lo[lo] == 0) continue;
        if (above + s.weight_bin[lo] >= target) {
          const uint32_t key = (s.bin << 8) | lo;
          const uint64_t w = s.weight_lo[lo];
          int64_t need = w == 0 ? s.count_lo[lo] : static_cast<int64_t>((target - above + w - 1) / w);
          if (need < 1) need = 1;
          if (need < s.count_lo[lo]) {
            s.need = need;
          } else if (key != s.cut_key) {
            s.cut_last_id = vocab - 1;
          }
          s.cut_key = key;
          break;
        }
        above += s.weight_bin[lo];
      }
    }
    __syncthreads();
    if (s.need > 0) {
      const int32_t last = nth_id_with_key<kVec>(v, s.cut_key, s.need, s);
      if (tid == 0) s.cut_last_id = last;
    }
    __syncthreads();
  }

  // Draw: W summed per thread in id order, one scan, then the owner's warp finds the token.
  uint64_t my_weight = 0;
  for_each_candidate<kVec>(v, [&](int i, uint32_t key) {
    if (is_kept(key, i, s)) my_weight += weight_of(key, v);
  });
  uint64_t total;
  const uint64_t before = block_exclusive_scan(my_weight, s.warp_u64, &s.total_u64, &total);
  const uint64_t target = sampling_draw_target(total, p.uniform);
  if (tid == 0) s.owner = -1;
  __syncthreads();
  if (my_weight > 0 && before <= target && target < before + my_weight) {
    s.owner = tid;
    s.owner_before = before;
  }
  __syncthreads();
  const int owner = s.owner;  // -1 only if every kept weight is 0, which the max's 2^44 rules out
  if (owner >= 0 && (tid >> 5) == (owner >> 5)) {
    // The owner's ids split over its warp's 32 lanes, then a warp scan.
    const int lane = tid & 31;
    const int owner_begin = min(vocab, owner * chunk);
    const int owner_end = min(vocab, owner_begin + chunk);
    const int sub = (owner_end - owner_begin + 31) / 32;
    const int lane_begin = min(owner_end, owner_begin + lane * sub);
    const int lane_end = min(owner_end, lane_begin + sub);
    uint64_t lane_weight = 0;
    for (int i = lane_begin; i < lane_end; ++i) {
      uint32_t key;
      if (sampling_order_key(v.row[i], &key, v.bf16) && is_kept(key, i, s)) lane_weight += weight_of(key, v);
    }
    const uint64_t lane_before = s.owner_before + warp_inclusive_scan(lane_weight) - lane_weight;
    if (lane_weight > 0 && lane_before <= target && target < lane_before + lane_weight) {
      uint64_t running = lane_before;
      for (int i = lane_begin; i < lane_end; ++i) {
        uint32_t key;
        if (!sampling_order_key(v.row[i], &key, v.bf16) || !is_kept(key, i, s)) continue;
        running += weight_of(key, v);
        if (running > target) {
          out_tokens[p.logits_row] = i;
          break;
        }
      }
    }
  }
}

Status bad(const std::string& what) { return invalid_argument("sample_rows: " + what); }

}  // namespace

Status sample_rows(const uint16_t* logits, int64_t stride, int num_logits_rows, const SampledRowParams* row_params,
                   int num_sampled_rows, int32_t* out_tokens, int vocab_size, cudaStream_t stream, DType dtype) {
  if (!is_element16(dtype)) return bad("logits must be float16 or bfloat16");
  const bool bf16 = dtype == DType::kBF16;
  if (num_sampled_rows < 0 || num_logits_rows < 0) return bad("negative row count");
  if (num_sampled_rows == 0) return Status::ok();
  if (vocab_size < 1 || vocab_size > kSamplingMaxVocab)
    return bad("vocab_size " + std::to_string(vocab_size) + " outside [1, " + std::to_string(kSamplingMaxVocab) + "]");
  if (stride < vocab_size)
    return bad("stride " + std::to_string(stride) + " < vocab_size " + std::to_string(vocab_size));
  if (!logits || !row_params || !out_tokens) return bad("null logits, row_params or out_tokens");
  if (stride % 8 == 0 && reinterpret_cast<uintptr_t>(logits) % 16 == 0) {
    sample_rows_kernel<true><<<num_sampled_rows, kThreads, 0, stream>>>(logits, stride, num_logits_rows, row_params,
                                                                        out_tokens, vocab_size, bf16);
  } else {
    sample_rows_kernel<false><<<num_sampled_rows, kThreads, 0, stream>>>(logits, stride, num_logits_rows, row_params,
                                                                         out_tokens, vocab_size, bf16);
  }
  return last_launch_status("sample_rows launch");
}

}  // namespace crosspoint::cuda
