// Attention over the paged fp16 (or e4m3) KV cache for one flat batch of prefill chunks and decodes
// (the GPU twin of kernels/paged_attention.h; same tables, same causal rule):
//   sequence s owns query rows seq_token_start[s] .. seq_token_start[s+1] (n_new rows) and
//   seq_context_len[s] cached tokens after this step; new row j sits at position
//   seq_context_len[s] - n_new + j and attends to positions 0 ..= that one. Token position p
//   is in block block_tables[s * max_blocks_per_seq + p / block_size], slot p % block_size.
//   GQA: query head h reads KV head h / (num_heads / num_kv_heads).
// Softmax in fp32 (online, flash style); output in the activations' dtype (fp16, or bf16: `dtype`).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "common/dtype.h"
#include "common/status.h"

namespace crosspoint::cuda {

struct CudaPagedAttentionArgs {
  const uint16_t* query = nullptr;  // [T, H, D] fp16, rows query_stride elements apart (the qkv buffer)
  int64_t query_stride = 0;
  uint16_t* output = nullptr;  // [T, H, D] fp16, rows output_stride elements apart
  int64_t output_stride = 0;
  const uint16_t* key_cache = nullptr;    // one layer's [num_blocks, block_size, Hkv, D] fp16
  const uint16_t* value_cache = nullptr;  // same layout
  // Or an fp8 cache (--kv-cache-dtype fp8): the same layout in e4m3 bytes, read as
  // e4m3 * k_scale / v_scale (vLLM's per-tensor scales). Exactly one pair is set.
  const uint8_t* key_cache_fp8 = nullptr;
  const uint8_t* value_cache_fp8 = nullptr;
  float k_scale = 1.0f;
  float v_scale = 1.0f;
  const int32_t* block_tables = nullptr;     // [num_seqs, max_blocks_per_seq] device
  const int32_t* seq_token_start = nullptr;  // [num_seqs + 1] device
  const int32_t* seq_context_len = nullptr;  // [num_seqs] device
  // seq_token_start and seq_context_len are read before the decode kernel waits for the kernel
  // before it (programmatic launch): they must not be the output of the kernel just before on
  // the stream (the step's inputs are copied from the host).
  int num_seqs = 0;
  int num_tokens = 0;
  int max_blocks_per_seq = 0;
  // Host-known upper bounds used to size the grid (never read from device memory, so a
  // captured graph stays valid while lengths change below them): the longest query chunk
  // and the longest context of this batch (or of the whole graph bucket).
  int max_query_len = 0;
  int max_context_len = 0;
  int num_heads = 0;
  int num_kv_heads = 0;
  int head_dim = 0;    // 64, 128 (and any multiple of 8 up to 256 on the slow path)
  int block_size = 0;  // 16 usually
  float scale = 0.0f;  // 1 / sqrt(head_dim)
  // Split-context scratch (flash-decoding partials and the decode kernel's merge counters);
  // cuda_paged_attention_workspace_bytes(). Zero-filled (cudaMemset) once after allocation:
  // its first cuda_paged_attention_workspace_counter_bytes() bytes are counters that must be
  // zero when a launch starts, and every launch leaves them zero. One stream at a time.
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
  // Batch-invariant mode (serve --deterministic): every row, prefill chunks included, on the
  // decode kernel, each (row, KV head) in one CTA over its whole context, so that a row's
  // sums are the same whatever the other rows of the batch, its chunking or the graph bucket.
  bool batch_invariant = false;
  // Of query, output and the 16-bit cache: kF16, or kBF16 (a bf16 model; the fp8 cache needs kF16).
  DType dtype = DType::kF16;
};

// Scratch bytes the launcher may use for these bounds (0 is allowed when it needs none; a
// smaller workspace means fewer context splits or the unbalanced decode kernel: slower, and
// rounded differently, never wrong).
size_t cuda_paged_attention_workspace_bytes(int max_num_tokens, int num_heads, int head_dim, int max_context_len);
// The counters at the start of a non-empty workspace (see CudaPagedAttentionArgs::workspace).
size_t cuda_paged_attention_workspace_counter_bytes();

// Prefill sequences (>= 16 new rows, head_dim 64/128) on the tensor-core prefill kernel, every
// other row on the tensor-core decode kernel (head_dim 64/128 and up to 16 query heads per KV
// head; the CUDA-core split kernel otherwise).
Status cuda_paged_attention(const CudaPagedAttentionArgs& args, cudaStream_t stream);

// Which kernels take which rows: kDefault is cuda_paged_attention. The others force what the
// dispatch itself chooses in other cases, so tests check every kernel on every shape:
enum class CudaAttentionKernels {
  kDefault,            // the decode rows on the balanced kernel where it measured faster (balanced_decode_pays),
                       // else on the partitioned one
  kSplitDecode,        // non-prefill rows on the CUDA-core split kernel (+ merge kernel): what runs where
                       // the decode kernel does not apply (head_dim not 64/128, > 16 query heads per KV head)
  kDecodeOnly,         // every row on the tensor-core decode kernel (each row reads its prefix): batch-invariant mode
  kSplitOnly,          // every row on the CUDA-core split kernel: where neither tensor-core kernel applies
  kBalancedDecode,     // as kDefault with every non-prefill row on the balanced decode kernel (one wave,
                       // equal tile shares from the actual lengths)
  kPartitionedDecode,  // as kDefault with every non-prefill row on the partitioned decode kernel
  kClusterDecode,      // as kDefault with every non-prefill row on the cluster decode kernel (sm_90+; the
                       // partitioned one elsewhere)
};
Status cuda_paged_attention_with(const CudaPagedAttentionArgs& args, CudaAttentionKernels kernels, cudaStream_t stream);

// cuda_paged_attention_with(args, CudaAttentionKernels::kSplitOnly, stream).
Status cuda_paged_attention_split_only(const CudaPagedAttentionArgs& args, cudaStream_t stream);

}  // namespace crosspoint::cuda
