// HostForwardBatch (host only, runs without a GPU): add_sequence lays out tokens, positions,
// sequence starts, contexts, block tables and logits rows as ForwardBatch documents them, and
// view() points at exactly those arrays.
#include <gtest/gtest.h>

#include <vector>

#include "model/host_forward_batch.h"

namespace crosspoint {
namespace {

std::vector<int32_t> as_vector(std::span<const int32_t> s) { return {s.begin(), s.end()}; }

TEST(HostForwardBatchTest, AddSequenceFollowsTheForwardBatchLayout) {
  HostForwardBatch h;
  h.clear(/*max_blocks_per_seq=*/2);
  const std::vector<int32_t> prefill = {11, 12, 13}, decode = {21}, table_a = {4, 5}, table_b = {7};
  h.add_sequence(prefill, /*num_cached=*/0, table_a, LogitsWanted::kLast);
  h.add_sequence(decode, /*num_cached=*/17, table_b, LogitsWanted::kLast);  // short row: padded with block 0
  const ForwardBatch b = h.view();
  EXPECT_EQ(as_vector(b.token_ids), (std::vector<int32_t>{11, 12, 13, 21}));
  EXPECT_EQ(as_vector(b.positions), (std::vector<int32_t>{0, 1, 2, 17}));
  EXPECT_EQ(as_vector(b.seq_token_start), (std::vector<int32_t>{0, 3, 4}));
  EXPECT_EQ(as_vector(b.seq_context_len), (std::vector<int32_t>{3, 18}));
  EXPECT_EQ(as_vector(b.block_tables), (std::vector<int32_t>{4, 5, 7, 0}));
  EXPECT_EQ(b.max_blocks_per_seq, 2);
  EXPECT_EQ(as_vector(b.logits_token_idx), (std::vector<int32_t>{2, 3}));
  EXPECT_EQ(b.num_tokens(), 4);
  EXPECT_EQ(b.num_seqs(), 2);
  EXPECT_EQ(h.num_seqs(), 2);
}

TEST(HostForwardBatchTest, LogitsForNoneOrAllTokens) {
  HostForwardBatch h;
  h.clear(1);
  const std::vector<int32_t> a = {1, 2}, b = {3, 4, 5}, table = {0};
  h.add_sequence(a, 0, table, LogitsWanted::kNone);
  h.add_sequence(b, 4, table, LogitsWanted::kAll);
  EXPECT_EQ(as_vector(h.view().logits_token_idx), (std::vector<int32_t>{2, 3, 4}));
}

TEST(HostForwardBatchTest, ClearStartsAgain) {
  HostForwardBatch h;
  h.clear(1);
  const std::vector<int32_t> a = {1, 2}, table = {3};
  h.add_sequence(a, 0, table, LogitsWanted::kLast);
  h.clear(3);
  const ForwardBatch b = h.view();
  EXPECT_EQ(b.num_tokens(), 0);
  EXPECT_EQ(b.num_seqs(), 0);
  EXPECT_EQ(b.max_blocks_per_seq, 3);
  EXPECT_EQ(as_vector(b.seq_token_start), (std::vector<int32_t>{0}));
  EXPECT_TRUE(b.logits_token_idx.empty());
}

TEST(HostForwardBatchTest, AnEmptyBatchHasOneSequenceStart) {
  const HostForwardBatch h;
  const ForwardBatch b = h.view();
  EXPECT_EQ(b.num_tokens(), 0);
  EXPECT_EQ(b.num_seqs(), 0);
  EXPECT_EQ(as_vector(b.seq_token_start), (std::vector<int32_t>{0}));
}

}  // namespace
}  // namespace crosspoint
