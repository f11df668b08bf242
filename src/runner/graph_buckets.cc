#include "runner/graph_buckets.h"

#include <algorithm>

#include "common/status.h"

namespace crosspoint {

std::vector<int32_t> graph_bucket_sizes(int32_t max_batch_size) {
  static constexpr int32_t kSizes[] = {1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 160, 192, 256};
  std::vector<int32_t> buckets;
  for (int32_t size : kSizes)
    if (size <= max_batch_size) buckets.push_back(size);
  if (max_batch_size > 0 && max_batch_size < 256 && (buckets.empty() || buckets.back() != max_batch_size))
    buckets.push_back(max_batch_size);
  return buckets;
}

int32_t choose_graph_bucket(const std::vector<int32_t>& buckets, int32_t num_seqs) {
  if (num_seqs <= 0) return -1;
  for (int32_t size : buckets)
    if (size >= num_seqs) return size;
  return -1;
}

int32_t choose_context_bound(const std::vector<int32_t>& bounds, int32_t max_context_len) {
  for (int32_t bound : bounds)
    if (bound >= max_context_len) return bound;
  return -1;
}

bool is_decode_only(const BatchPlan& plan) {
  if (plan.seqs.empty()) return false;
  return std::all_of(plan.seqs.begin(), plan.seqs.end(),
                     [](const ScheduledSequence& s) { return s.num_new_tokens() == 1; });
}

ForwardBatch PaddedDecodeBatch::build(const ForwardBatch& batch, int32_t bucket) {
  const int32_t S = batch.num_seqs(), stride = std::max(1, batch.max_blocks_per_seq);
  CROSSPOINT_CHECK(S <= bucket && batch.num_tokens() == S,
                   "PaddedDecodeBatch: needs a decode batch no larger than the bucket");
  padded_.clear(stride);
  for (int32_t s = 0; s < S; ++s)
    padded_.add_sequence(
        batch.token_ids.subspan(s, 1), batch.seq_context_len[s] - 1,
        batch.block_tables.subspan(static_cast<size_t>(s) * batch.max_blocks_per_seq, batch.max_blocks_per_seq),
        LogitsWanted::kLast);
  static constexpr int32_t kPaddingToken[1] = {0}, kPaddingBlocks[1] = {0};
  for (int32_t r = S; r < bucket; ++r) padded_.add_sequence(kPaddingToken, 0, kPaddingBlocks, LogitsWanted::kLast);
  return padded_.view();
}

}  // namespace crosspoint
