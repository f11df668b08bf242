#include "quant/sequence_forward.h"

namespace crosspoint {

Status forward_sequences(const Model& model, const std::vector<std::vector<int32_t>>& sequences, bool all_positions,
                         std::vector<float>& logits) {
  constexpr int32_t kBlockSize = 16;
  if (sequences.empty()) return invalid_argument("forward_sequences: no sequences");
  int32_t max_blocks = 0, total_blocks = 0;
  for (const auto& s : sequences) {
    if (s.empty()) return invalid_argument("forward_sequences: an empty sequence");
    const int32_t blocks = (static_cast<int32_t>(s.size()) + kBlockSize - 1) / kBlockSize;
    max_blocks = std::max(max_blocks, blocks);
    total_blocks += blocks;
  }
  std::vector<int32_t> token_ids, positions, starts{0}, context_lens, logits_idx;
  std::vector<int32_t> block_tables(static_cast<size_t>(sequences.size()) * max_blocks, 0);  // [num_seqs, max_blocks]
  int32_t next_block = 0;
  for (size_t s = 0; s < sequences.size(); ++s) {
    const auto& seq = sequences[s];
    const int32_t start = static_cast<int32_t>(token_ids.size());
    for (size_t i = 0; i < seq.size(); ++i) {
      token_ids.push_back(seq[i]);
      positions.push_back(static_cast<int32_t>(i));
      if (all_positions) logits_idx.push_back(start + static_cast<int32_t>(i));
    }
    if (!all_positions) logits_idx.push_back(static_cast<int32_t>(token_ids.size()) - 1);
    starts.push_back(static_cast<int32_t>(token_ids.size()));
    context_lens.push_back(static_cast<int32_t>(seq.size()));
    const int32_t blocks = (static_cast<int32_t>(seq.size()) + kBlockSize - 1) / kBlockSize;
    for (int32_t b = 0; b < blocks; ++b) block_tables[s * max_blocks + b] = next_block++;
  }
  CpuKvCache cache(model.kv_cache_shape(total_blocks, kBlockSize));
  ForwardBatch batch;
  batch.token_ids = token_ids;
  batch.positions = positions;
  batch.seq_token_start = starts;
  batch.seq_context_len = context_lens;
  batch.block_tables = block_tables;
  batch.max_blocks_per_seq = max_blocks;
  batch.logits_token_idx = logits_idx;
  logits.assign(logits_idx.size() * static_cast<size_t>(model.vocab_size()), 0.0f);
  return model.forward(batch, cache, logits.data());
}

}  // namespace crosspoint
