// Helpers for the model tests: the committed transformers references, and a minimal
// sequence/block bookkeeper that builds ForwardBatches (the real one lives in scheduler/runner).
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

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
    token_ids_.clear();
    positions_.clear();
    starts_ = {0};
    contexts_.clear();
    table_rows_.clear();
    logits_idx_.clear();
    for (const SeqChunk& chunk : chunks) {
      int32_t& context = context_[chunk.seq_idx];
      for (int32_t id : chunk.token_ids) {
        if (context % block_size_ == 0) tables_[chunk.seq_idx * max_blocks_ + context / block_size_] = next_block_++;
        token_ids_.push_back(id);
        positions_.push_back(context++);
        if (all_logits) logits_idx_.push_back(static_cast<int32_t>(token_ids_.size()) - 1);
      }
      if (!all_logits) logits_idx_.push_back(static_cast<int32_t>(token_ids_.size()) - 1);
      starts_.push_back(static_cast<int32_t>(token_ids_.size()));
      contexts_.push_back(context);
      table_rows_.insert(table_rows_.end(), tables_.begin() + chunk.seq_idx * max_blocks_,
                         tables_.begin() + (chunk.seq_idx + 1) * max_blocks_);
    }
    ForwardBatch batch;
    batch.token_ids = token_ids_;
    batch.positions = positions_;
    batch.seq_token_start = starts_;
    batch.seq_context_len = contexts_;
    batch.block_tables = table_rows_;
    batch.max_blocks_per_seq = max_blocks_;
    batch.logits_token_idx = logits_idx_;
    return batch;
  }
  int32_t num_blocks_used() const { return next_block_; }

 private:
  int32_t block_size_, max_blocks_, next_block_ = 0;
  std::vector<int32_t> context_, tables_;
  std::vector<int32_t> token_ids_, positions_, starts_, contexts_, table_rows_, logits_idx_;
};

}  // namespace crosspoint::testing
