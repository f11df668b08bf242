// Helpers for the model tests: the committed transformers references, and a minimal
// sequence/block bookkeeper that builds ForwardBatches with HostForwardBatch (the scheduler
// and runner do the same for the engine).
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "model/host_forward_batch.h"
#include "model/model.h"

namespace crosspoint::testing {

inline std::string model_fixture_dir(const std::string& name) {
  return std::string(CROSSPOINT_FIXTURES_DIR) + "/model/" + name;
}

// reference.json + logits.f32 written by tests/fixtures/model/make_tiny_models.py.
struct TransformersReference {
  std::vector<int32_t> token_ids;
  int64_t vocab_size = 0;
  std::vector<float> logits;  // [num_tokens, vocab_size] f32

  const float* logits_at(int64_t position) const { return logits.data() + position * vocab_size; }
};

inline TransformersReference load_reference(const std::string& name) {
  TransformersReference ref;
  std::ifstream meta(model_fixture_dir(name) + "/reference.json");
  const auto j = nlohmann::json::parse(meta);
  ref.token_ids = j["token_ids"].get<std::vector<int32_t>>();
  ref.vocab_size = j["vocab_size"].get<int64_t>();
  ref.logits.resize(ref.token_ids.size() * ref.vocab_size);
  std::ifstream bin(model_fixture_dir(name) + "/" + j["logits_file"].get<std::string>(), std::ios::binary);
  bin.read(reinterpret_cast<char*>(ref.logits.data()), static_cast<std::streamsize>(ref.logits.size() * sizeof(float)));
  EXPECT_TRUE(bin.good()) << "short logits file for " << name;
  return ref;
}

// One step's worth of work for one sequence: its new tokens.
struct SeqChunk {
  int32_t seq_idx;
  std::vector<int32_t> token_ids;
};

// Gives each sequence fresh blocks as it grows (in an interleaved order, so sequences'
// blocks are not contiguous) and builds the ForwardBatch of a step.
class BatchBuilder {
 public:
  BatchBuilder(int32_t num_seqs, int32_t max_blocks_per_seq, int32_t block_size)
      : block_size_(block_size),
        max_blocks_(max_blocks_per_seq),
        context_(num_seqs, 0),
        tables_(static_cast<size_t>(num_seqs) * max_blocks_per_seq, -1) {}

  // Builds the step; logits for every new token when all_logits, else each chunk's last.
  ForwardBatch build(const std::vector<SeqChunk>& chunks, bool all_logits) {
    batch_.clear(max_blocks_);
    for (const SeqChunk& chunk : chunks) {
      int32_t& context = context_[chunk.seq_idx];
      const int32_t num_cached = context;
      for (size_t i = 0; i < chunk.token_ids.size(); ++i, ++context)
        if (context % block_size_ == 0) tables_[chunk.seq_idx * max_blocks_ + context / block_size_] = next_block_++;
      batch_.add_sequence(chunk.token_ids, num_cached,
                          std::span<const int32_t>(tables_).subspan(chunk.seq_idx * max_blocks_, max_blocks_),
                          all_logits ? LogitsWanted::kAll : LogitsWanted::kLast);
    }
    return batch_.view();
  }
  int32_t num_blocks_used() const { return next_block_; }

 private:
  int32_t block_size_, max_blocks_, next_block_ = 0;
  std::vector<int32_t> context_, tables_;
  HostForwardBatch batch_;
};

}  // namespace crosspoint::testing
