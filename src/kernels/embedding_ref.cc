#include "kernels/embedding.h"
#include "kernels/weight_dtype.h"

namespace crosspoint {

Status check_embedding_ids(const EmbeddingArgs& a) {
  CROSSPOINT_RETURN_IF_ERROR(check_weight_dtype("embedding", a.table_dtype));
  for (int64_t t = 0; t < a.num_tokens; ++t) {
    if (a.token_ids[t] < 0 || a.token_ids[t] >= a.vocab_size)
      return invalid_argument("embedding: token id " + std::to_string(a.token_ids[t]) + " at position " +
                              std::to_string(t) + " is outside the vocabulary [0, " + std::to_string(a.vocab_size) +
                              ")");
  }
  return Status::ok();
}

Status embedding_ref(const EmbeddingArgs& a) {
  CROSSPOINT_RETURN_IF_ERROR(check_embedding_ids(a));
  for (int64_t t = 0; t < a.num_tokens; ++t)
    for (int64_t i = 0; i < a.hidden_size; ++i)
      a.out[t * a.hidden_size + i] = load_weight(a.table, a.table_dtype, a.token_ids[t] * a.hidden_size + i);
  return Status::ok();
}

}  // namespace crosspoint
