// The integer inputs of one CUDA model step, packed on the host into one int32 buffer so a
// single cudaMemcpyAsync moves them to the device. The layout is fixed by a capacity (the
// engine's max_num_batched_tokens, max_num_seqs, ...), so every array sits at the same device
// address in every step: a captured CUDA graph keeps reading the right place.
//
// Host-only (no CUDA headers): the packing and its checks are tested on machines without a GPU.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/status.h"
#include "model/forward_batch.h"

namespace crosspoint {

// Upper bounds the buffers are sized for.
struct StepInputCapacity {
  int32_t max_num_tokens = 0;      // tokens per step (max_num_batched_tokens)
  int32_t max_num_seqs = 0;        // sequences per step
  int32_t max_num_logits = 0;      // logits rows per step
  int32_t max_blocks_per_seq = 0;  // ceil(max_model_len / block_size): block table row stride bound
};

// Offsets, in int32 elements from the start of the packed buffer, of each array.
struct StepInputLayout {
  StepInputCapacity capacity;
  size_t token_ids = 0;         // [max_num_tokens]
  size_t positions = 0;         // [max_num_tokens]
  size_t slot_mapping = 0;      // [max_num_tokens] block * block_size + offset, -1 = don't store
  size_t seq_token_start = 0;   // [max_num_seqs + 1]
  size_t seq_context_len = 0;   // [max_num_seqs]
  size_t logits_token_idx = 0;  // [max_num_logits]
  size_t block_tables = 0;      // [max_num_seqs, max_blocks_per_seq] (rows block_table_stride apart)
  size_t total = 0;             // int32 elements of the whole buffer

  static StepInputLayout for_capacity(const StepInputCapacity& capacity);
};

// What a packed step holds, beside the arrays: the host integers the launches are sized by.
struct PackedStepShape {
  int32_t num_tokens = 0;
  int32_t num_seqs = 0;
  int32_t num_logits = 0;
  int32_t block_table_stride = 0;  // elements between block table rows
  int32_t max_query_len = 0;       // longest run of new tokens of one sequence
  int32_t max_context_len = 0;     // longest seq_context_len
  size_t num_packed_int32 = 0;     // prefix of the buffer that must be copied to the device
};

// The KV cache slot of each new token: block_tables[s][p / block_size] * block_size + p % block_size
// for position p of sequence s. Fails (naming the token) when a block is outside [0, num_blocks).
//   slot_mapping [batch.num_tokens()] int32
Status compute_slot_mapping(const ForwardBatch& batch, int32_t block_size, int32_t num_blocks, int32_t* slot_mapping);

// Checks `batch` against the capacity, the vocabulary and the cache (token ids, positions
// matching the context lengths, block ids), then writes it into `packed` (layout.total int32)
// with block table rows `block_table_stride` apart (>= batch.max_blocks_per_seq, <= the
// capacity's). Tokens from index num_stored_tokens on get slot -1 (their K/V is not stored:
// the padding rows of a CUDA-graph bucket); pass batch.num_tokens() to store all.
// Nothing is written past shape.num_packed_int32.
Result<PackedStepShape> pack_step_inputs(const ForwardBatch& batch, const StepInputLayout& layout, int32_t vocab_size,
                                         int32_t block_size, int32_t num_blocks, int32_t block_table_stride,
                                         int32_t num_stored_tokens, int32_t* packed);

}  // namespace crosspoint
