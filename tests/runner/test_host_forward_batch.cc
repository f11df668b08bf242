// HostForwardBatch (host only, runs without a GPU): add_sequence lays out tokens, positions,
// sequence starts, contexts and block tables as ForwardBatch documents them, and view()
// points at exactly those arrays.
#include <gtest/gtest.h>

#include <vector>

#include "model/host_forward_batch.h"

namespace crosspoint {
namespace {

std::vector<int32_t> as_vector(std::span<const int32_t> s) { return {s.begin(), s.end()}; }

TEST(HostForwardBatchTest, AddSequenceFollowsTheForwardBatchLayout) {
  cuda::HostForwardBatch h;
  h.max_blocks_per_seq = 2;
  h.add_sequence({11, 12, 13}, /*num_cached=*/0, {4, 5});  // a prefill
  h.add_sequence({21}, /*num_cached=*/17, {7, 9});         // a decode after 17 cached tokens
  h.logits_token_idx = {2, 3};
  const ForwardBatch b = h.view();
  EXPECT_EQ(as_vector(b.token_ids), (std::vector<int32_t>{11, 12, 13, 21}));
  EXPECT_EQ(as_vector(b.positions), (std::vector<int32_t>{0, 1, 2, 17}));
  EXPECT_EQ(as_vector(b.seq_token_start), (std::vector<int32_t>{0, 3, 4}));
  EXPECT_EQ(as_vector(b.seq_context_len), (std::vector<int32_t>{3, 18}));
  EXPECT_EQ(as_vector(b.block_tables), (std::vector<int32_t>{4, 5, 7, 9}));
  EXPECT_EQ(b.max_blocks_per_seq, 2);
  EXPECT_EQ(as_vector(b.logits_token_idx), (std::vector<int32_t>{2, 3}));
  EXPECT_EQ(b.num_tokens(), 4);
  EXPECT_EQ(b.num_seqs(), 2);
  EXPECT_EQ(b.token_ids.data(), h.token_ids.data());  // a view, not a copy
}

TEST(HostForwardBatchTest, AnEmptyBatchHasOneSequenceStart) {
  const cuda::HostForwardBatch h;
  const ForwardBatch b = h.view();
  EXPECT_EQ(b.num_tokens(), 0);
  EXPECT_EQ(b.num_seqs(), 0);
  EXPECT_EQ(as_vector(b.seq_token_start), (std::vector<int32_t>{0}));
}

}  // namespace
}  // namespace crosspoint
