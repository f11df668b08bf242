// A deterministic toy "model" for engine and runner tests: no weights, but it goes through
// the paged KV cache for real. Each token's id is written into its K slot (found through
// the block table), and the logits of a sequence are a hash of every token read back from
// the cache through the block table. A block shared by two sequences, a stale block after
// preemption or a wrong position changes the logits, so outputs stop matching the
// reference (toy_reference_logits on the plain token list).
#pragma once

#include <cstdint>
#include <vector>

#include "model/forward_batch.h"
#include "model/kv_cache.h"
#include "runner/cpu_model_runner.h"

namespace crosspoint::testing {

constexpr int32_t kToyVocabSize = 97;
constexpr int32_t kToyEosTokenId = 3;

inline KvCacheShape toy_kv_shape(int32_t num_blocks, int32_t block_size) {
  KvCacheShape shape;
  shape.num_layers = 1;
  shape.num_blocks = num_blocks;
  shape.block_size = block_size;
  shape.num_kv_heads = 1;
  shape.head_dim = 1;
  return shape;
}

// Logits of the next token after `context` ([vocab] f32).
inline void toy_reference_logits(const std::vector<int32_t>& context, float* logits) {
  uint64_t h = 1469598103934665603ull;
  for (size_t pos = 0; pos < context.size(); ++pos) {
    h = (h ^ static_cast<uint64_t>(context[pos] + 1000 * pos)) * 1099511628211ull;
  }
  for (int32_t v = 0; v < kToyVocabSize; ++v) {
    const uint64_t x = (h ^ (static_cast<uint64_t>(v) * 0x9E3779B97F4A7C15ull)) * 0xBF58476D1CE4E5B9ull;
    logits[v] = static_cast<float>((x >> 40) % 1000) / 250.0f;  // 0..4
  }
}

inline Status toy_forward(const ForwardBatch& batch, CpuKvCache& kv, float* logits) {
  const int32_t block_size = kv.shape().block_size;
  for (int32_t s = 0; s < batch.num_seqs(); ++s) {
    const int32_t* table = batch.block_tables.data() + static_cast<size_t>(s) * batch.max_blocks_per_seq;
    for (int32_t t = batch.seq_token_start[s]; t < batch.seq_token_start[s + 1]; ++t) {
      const int32_t pos = batch.positions[t];
      kv.key_block(0, table[pos / block_size])[pos % block_size] = static_cast<float>(batch.token_ids[t]);
    }
  }
  for (int32_t row = 0; row < static_cast<int32_t>(batch.logits_token_idx.size()); ++row) {
    const int32_t t = batch.logits_token_idx[row];
    int32_t s = 0;
    while (batch.seq_token_start[s + 1] <= t) ++s;
    const int32_t* table = batch.block_tables.data() + static_cast<size_t>(s) * batch.max_blocks_per_seq;
    const int32_t context_len = batch.positions[t] + 1;
    std::vector<int32_t> context(context_len);
    for (int32_t pos = 0; pos < context_len; ++pos) {
      context[pos] = static_cast<int32_t>(kv.key_block(0, table[pos / block_size])[pos % block_size]);
    }
    toy_reference_logits(context, logits + static_cast<size_t>(row) * kToyVocabSize);
  }
  return Status::ok();
}

inline std::unique_ptr<CpuModelRunner> make_toy_runner(int32_t num_blocks, int32_t block_size) {
  return std::make_unique<CpuModelRunner>(toy_kv_shape(num_blocks, block_size), kToyVocabSize, toy_forward);
}

}  // namespace crosspoint::testing
