#include "quant/sequence_forward.h"

#include <algorithm>

#include "model/host_forward_batch.h"

namespace crosspoint {

Status build_sequence_batch(const std::vector<std::vector<int32_t>>& sequences, bool all_positions, int32_t block_size,
                            HostForwardBatch& batch, int32_t* total_blocks) {
  if (sequences.empty()) return invalid_argument("forward_sequences: no sequences");
  int32_t max_blocks = 0;
  *total_blocks = 0;
  for (const auto& s : sequences) {
    if (s.empty()) return invalid_argument("forward_sequences: an empty sequence");
    const int32_t blocks = (static_cast<int32_t>(s.size()) + block_size - 1) / block_size;
    max_blocks = std::max(max_blocks, blocks);
    *total_blocks += blocks;
  }
  batch.clear(max_blocks);
  std::vector<int32_t> table_row;
  int32_t next_block = 0;
  for (const auto& seq : sequences) {
    const int32_t blocks = (static_cast<int32_t>(seq.size()) + block_size - 1) / block_size;
    table_row.clear();
    for (int32_t b = 0; b < blocks; ++b) table_row.push_back(next_block++);
    batch.add_sequence(seq, /*num_cached=*/0, table_row, all_positions ? LogitsWanted::kAll : LogitsWanted::kLast);
  }
  return Status::ok();
}

Status forward_sequences(const Model& model, const std::vector<std::vector<int32_t>>& sequences, bool all_positions,
                         std::vector<float>& logits, DType kv_dtype) {
  constexpr int32_t kBlockSize = 16;
  HostForwardBatch batch;
  int32_t total_blocks = 0;
  CROSSPOINT_RETURN_IF_ERROR(build_sequence_batch(sequences, all_positions, kBlockSize, batch, &total_blocks));
  CpuKvCache cache(model.kv_cache_shape(total_blocks, kBlockSize, kv_dtype));
  const ForwardBatch view = batch.view();
  logits.assign(view.logits_token_idx.size() * static_cast<size_t>(model.vocab_size()), 0.0f);
  return model.forward(view, cache, logits.data());
}

}  // namespace crosspoint
