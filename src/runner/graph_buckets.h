// CUDA-graph batch-size buckets for decode steps, and the padding that makes a decode step
// fit its bucket. Host-only (no CUDA headers): tested without a GPU.
//
// A graph is captured once per bucket size B with B sequences of one token each. A step with
// S <= B decoding sequences is padded to B rows: padding row r gets token 0 at position 0, a
// context of 1 token in block 0, and its K/V is not stored (slot -1); its logits are ignored.
#pragma once

#include <cstdint>
#include <vector>

#include "model/host_forward_batch.h"
#include "model/forward_batch.h"
#include "scheduler/batch_plan.h"

namespace crosspoint {

// 1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 160, 192, 256 up to max_batch_size, plus
// max_batch_size itself when it falls between two of them (max_batch_size < 256).
std::vector<int32_t> graph_bucket_sizes(int32_t max_batch_size);

// The smallest bucket >= num_seqs, or -1 when none is (the step runs eagerly).
int32_t choose_graph_bucket(const std::vector<int32_t>& buckets, int32_t num_seqs);

// The smallest of the attention context bounds graphs are captured for that is >=
// max_context_len, or -1 when none is.
int32_t choose_context_bound(const std::vector<int32_t>& bounds, int32_t max_context_len);

// True when every scheduled sequence computes exactly one token (a pure decode step).
bool is_decode_only(const BatchPlan& plan);

// Builds the padded copy of a decode-only batch; the returned ForwardBatch points into this
// object until the next build(). Its logits rows are all `bucket` rows in order (row r is
// sequence r), whatever batch.logits_token_idx says.
class PaddedDecodeBatch {
 public:
  ForwardBatch build(const ForwardBatch& batch, int32_t bucket);

 private:
  HostForwardBatch padded_;  // bucket sequences of one token each
};

}  // namespace crosspoint
