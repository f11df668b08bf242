#include "model/step_inputs.h"

#include <algorithm>
#include <string>

namespace crosspoint {

StepInputLayout StepInputLayout::for_capacity(const StepInputCapacity& c) {
  CROSSPOINT_CHECK(c.max_num_tokens > 0 && c.max_num_seqs > 0 && c.max_num_logits > 0 && c.max_blocks_per_seq > 0,
                   "StepInputLayout: every capacity must be positive");
  StepInputLayout l;
  l.capacity = c;
  size_t at = 0;
  auto take = [&at](size_t n) {
    const size_t offset = at;
    at += (n + 3) / 4 * 4;  // keep every array 16-byte aligned
    return offset;
  };
  l.token_ids = take(c.max_num_tokens);
  l.positions = take(c.max_num_tokens);
  l.slot_mapping = take(c.max_num_tokens);
  l.seq_token_start = take(static_cast<size_t>(c.max_num_seqs) + 1);
  l.seq_context_len = take(c.max_num_seqs);
  l.logits_token_idx = take(c.max_num_logits);
  // Last, so a step copies only the rows it uses.
  l.block_tables = take(static_cast<size_t>(c.max_num_seqs) * c.max_blocks_per_seq);
  l.total = at;
  return l;
}

Status compute_slot_mapping(const ForwardBatch& b, int32_t block_size, int32_t num_blocks, int32_t* slot_mapping) {
  for (int32_t s = 0; s < b.num_seqs(); ++s) {
    const int32_t start = b.seq_token_start[s], end = b.seq_token_start[s + 1];
    for (int32_t t = start; t < end; ++t) {
      const int32_t position = b.positions[t];
      const int32_t logical_block = position / block_size;
      if (position < 0 || logical_block >= b.max_blocks_per_seq)
        return invalid_argument("cuda step: token " + std::to_string(t) + " at position " + std::to_string(position) +
                                " is outside its block table of " + std::to_string(b.max_blocks_per_seq) + " blocks");
      const int32_t block = b.block_tables[static_cast<size_t>(s) * b.max_blocks_per_seq + logical_block];
      if (block < 0 || block >= num_blocks)
        return invalid_argument("cuda step: sequence " + std::to_string(s) + " maps position " +
                                std::to_string(position) + " to block " + std::to_string(block) +
                                ", outside the cache's " + std::to_string(num_blocks) + " blocks");
      slot_mapping[t] = block * block_size + position % block_size;
    }
  }
  return Status::ok();
}

namespace {

Status check_batch(const ForwardBatch& b, const StepInputCapacity& c, int32_t vocab_size, int32_t block_size,
                   int32_t num_blocks, int32_t block_table_stride) {
  const int32_t T = b.num_tokens(), S = b.num_seqs(), R = static_cast<int32_t>(b.logits_token_idx.size());
  if (T > c.max_num_tokens || S > c.max_num_seqs || R > c.max_num_logits)
    return invalid_argument("cuda step: " + std::to_string(T) + " tokens, " + std::to_string(S) + " sequences, " +
                            std::to_string(R) + " logits rows exceed the buffers sized for " +
                            std::to_string(c.max_num_tokens) + ", " + std::to_string(c.max_num_seqs) + ", " +
                            std::to_string(c.max_num_logits));
  if (b.max_blocks_per_seq < 0 || block_table_stride < b.max_blocks_per_seq ||
      block_table_stride > c.max_blocks_per_seq)
    return invalid_argument("cuda step: block table rows of " + std::to_string(b.max_blocks_per_seq) +
                            " blocks (stride " + std::to_string(block_table_stride) + ") exceed the " +
                            std::to_string(c.max_blocks_per_seq) + " blocks of max-model-len");
  if (b.positions.size() != b.token_ids.size())
    return invalid_argument("cuda step: positions and token_ids differ in length");
  if (static_cast<int32_t>(b.seq_token_start.size()) != S + 1 || (S > 0 && b.seq_token_start[0] != 0) ||
      (S > 0 && b.seq_token_start[S] != T) || (S == 0 && T != 0))
    return invalid_argument("cuda step: seq_token_start must have num_seqs + 1 entries from 0 to num_tokens");
  if (b.block_tables.size() < static_cast<size_t>(S) * b.max_blocks_per_seq)
    return invalid_argument("cuda step: block_tables is smaller than num_seqs * max_blocks_per_seq");
  for (int32_t t = 0; t < T; ++t)
    if (b.token_ids[t] < 0 || b.token_ids[t] >= vocab_size)
      return invalid_argument("cuda step: token " + std::to_string(t) + " has id " + std::to_string(b.token_ids[t]) +
                              ", outside the vocabulary of " + std::to_string(vocab_size));
  for (int32_t s = 0; s < S; ++s) {
    const int32_t start = b.seq_token_start[s], end = b.seq_token_start[s + 1];
    if (end < start)
      return invalid_argument("cuda step: seq_token_start is not ascending at sequence " + std::to_string(s));
    const int32_t context = b.seq_context_len[s];
    if (context < end - start || context > b.max_blocks_per_seq * block_size)
      return invalid_argument("cuda step: sequence " + std::to_string(s) + " has context length " +
                              std::to_string(context) + " for " + std::to_string(end - start) +
                              " new tokens and a block table of " + std::to_string(b.max_blocks_per_seq) + " blocks");
    for (int32_t t = start; t < end; ++t) {
      const int32_t expected = context - (end - start) + (t - start);
      if (b.positions[t] != expected)
        return invalid_argument("cuda step: token " + std::to_string(t) + " has position " +
                                std::to_string(b.positions[t]) + " but its sequence's context length implies " +
                                std::to_string(expected));
    }
    // Attention reads every block up to the context length: each must exist.
    const int32_t used_blocks = (context + block_size - 1) / block_size;
    for (int32_t i = 0; i < used_blocks; ++i) {
      const int32_t block = b.block_tables[static_cast<size_t>(s) * b.max_blocks_per_seq + i];
      if (block < 0 || block >= num_blocks)
        return invalid_argument("cuda step: sequence " + std::to_string(s) + " has block " + std::to_string(block) +
                                " at logical block " + std::to_string(i) + ", outside the cache's " +
                                std::to_string(num_blocks) + " blocks");
    }
  }
  for (int32_t idx : b.logits_token_idx)
    if (idx < 0 || idx >= T)
      return invalid_argument("cuda step: logits_token_idx " + std::to_string(idx) + " is outside the batch");
  return Status::ok();
}

}  // namespace

Result<PackedStepShape> pack_step_inputs(const ForwardBatch& b, const StepInputLayout& layout, int32_t vocab_size,
                                         int32_t block_size, int32_t num_blocks, int32_t block_table_stride,
                                         int32_t num_stored_tokens, int32_t* packed) {
  CROSSPOINT_RETURN_IF_ERROR(check_batch(b, layout.capacity, vocab_size, block_size, num_blocks, block_table_stride));
  const int32_t T = b.num_tokens(), S = b.num_seqs(), R = static_cast<int32_t>(b.logits_token_idx.size());
  std::copy(b.token_ids.begin(), b.token_ids.end(), packed + layout.token_ids);
  std::copy(b.positions.begin(), b.positions.end(), packed + layout.positions);
  CROSSPOINT_RETURN_IF_ERROR(compute_slot_mapping(b, block_size, num_blocks, packed + layout.slot_mapping));
  for (int32_t t = std::max(0, num_stored_tokens); t < T; ++t) packed[layout.slot_mapping + t] = -1;
  std::copy(b.seq_token_start.begin(), b.seq_token_start.end(), packed + layout.seq_token_start);
  std::copy(b.seq_context_len.begin(), b.seq_context_len.end(), packed + layout.seq_context_len);
  std::copy(b.logits_token_idx.begin(), b.logits_token_idx.end(), packed + layout.logits_token_idx);
  PackedStepShape shape;
  shape.num_tokens = T;
  shape.num_seqs = S;
  shape.num_logits = R;
  shape.block_table_stride = block_table_stride;
  for (int32_t s = 0; s < S; ++s) {
    int32_t* row = packed + layout.block_tables + static_cast<size_t>(s) * block_table_stride;
    const int32_t* src = b.block_tables.data() + static_cast<size_t>(s) * b.max_blocks_per_seq;
    std::copy(src, src + b.max_blocks_per_seq, row);
    // Entries past the batch's own stride point at block 0; never read (beyond the context).
    std::fill(row + b.max_blocks_per_seq, row + block_table_stride, 0);
    shape.max_query_len = std::max(shape.max_query_len, b.seq_token_start[s + 1] - b.seq_token_start[s]);
    shape.max_context_len = std::max(shape.max_context_len, b.seq_context_len[s]);
  }
  shape.num_packed_int32 = layout.block_tables + static_cast<size_t>(S) * block_table_stride;
  return shape;
}

}  // namespace crosspoint
