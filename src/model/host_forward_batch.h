// The host arrays of one ForwardBatch, owned, for the steps the CUDA model and runner make up
// themselves (the profile step, graph capture, padded decode batches). Host-only: no CUDA
// headers, usable from code tested without a GPU.
#pragma once

#include <cstdint>
#include <vector>

#include "common/status.h"
#include "model/forward_batch.h"

namespace crosspoint::cuda {

struct HostForwardBatch {
  std::vector<int32_t> token_ids;              // [num_tokens]
  std::vector<int32_t> positions;              // [num_tokens]
  std::vector<int32_t> seq_token_start = {0};  // [num_seqs + 1]
  std::vector<int32_t> seq_context_len;        // [num_seqs]
  std::vector<int32_t> block_tables;           // [num_seqs, max_blocks_per_seq]
  int32_t max_blocks_per_seq = 0;
  std::vector<int32_t> logits_token_idx;  // [num_logits]; add_sequence adds none

  // Appends a sequence computing `tokens` after `num_cached` tokens already in its cache
  // (positions num_cached, num_cached + 1, ...), its K/V in `block_table_row`
  // ([max_blocks_per_seq] block ids).
  void add_sequence(const std::vector<int32_t>& tokens, int32_t num_cached,
                    const std::vector<int32_t>& block_table_row) {
    CROSSPOINT_CHECK(static_cast<int32_t>(block_table_row.size()) == max_blocks_per_seq,
                     "HostForwardBatch: a block table row has max_blocks_per_seq entries");
    for (size_t i = 0; i < tokens.size(); ++i) {
      token_ids.push_back(tokens[i]);
      positions.push_back(num_cached + static_cast<int32_t>(i));
    }
    seq_token_start.push_back(static_cast<int32_t>(token_ids.size()));
    seq_context_len.push_back(num_cached + static_cast<int32_t>(tokens.size()));
    block_tables.insert(block_tables.end(), block_table_row.begin(), block_table_row.end());
  }

  // The ForwardBatch over these arrays; valid while they are neither changed nor destroyed.
  ForwardBatch view() const {
    ForwardBatch b;
    b.token_ids = token_ids;
    b.positions = positions;
    b.seq_token_start = seq_token_start;
    b.seq_context_len = seq_context_len;
    b.block_tables = block_tables;
    b.max_blocks_per_seq = max_blocks_per_seq;
    b.logits_token_idx = logits_token_idx;
    return b;
  }
};

}  // namespace crosspoint::cuda
