// Embedding gather: out[t] = table[token_ids[t]] converted to f32.
#pragma once

#include <cstdint>

#include "common/dtype.h"
#include "common/status.h"

namespace crosspoint {

struct EmbeddingArgs {
  const int32_t* token_ids = nullptr;  // [num_tokens]
  int64_t num_tokens = 0;
  const void* table = nullptr;  // [vocab_size, hidden_size] in table_dtype (f32/f16/bf16)
  DType table_dtype = DType::kF32;
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  float* out = nullptr;  // [num_tokens, hidden_size] f32
};

// A token id outside [0, vocab_size) is an invalid_argument naming the id and position.
Status embedding(const EmbeddingArgs& args);
Status embedding_ref(const EmbeddingArgs& args);

}  // namespace crosspoint
