// Host-only parts of the CUDA model and runner (no GPU needed): packing of the step inputs
// with the slot mapping, the graph buckets and decode padding.
#include <gtest/gtest.h>

#include <vector>

#include "model/step_inputs.h"
#include "runner/graph_buckets.h"

namespace crosspoint {
namespace {

// Two sequences: seq 0 decodes its 19th token (context 19, blocks 5 then 2), seq 1 prefills
// 3 tokens after 14 cached ones (context 17, blocks 1 then 4). Block size 16. Raw arrays,
// not HostForwardBatch, because the checks below break them one field at a time.
struct TwoSeqBatch {
  std::vector<int32_t> token_ids = {7, 100, 101, 102};
  std::vector<int32_t> positions = {18, 14, 15, 16};
  std::vector<int32_t> starts = {0, 1, 4};
  std::vector<int32_t> context = {19, 17};
  std::vector<int32_t> tables = {5, 2, 1, 4};  // [2 seqs, 2 blocks]
  std::vector<int32_t> logits_idx = {0, 3};
  ForwardBatch batch() const {
    ForwardBatch b;
    b.token_ids = token_ids;
    b.positions = positions;
    b.seq_token_start = starts;
    b.seq_context_len = context;
    b.block_tables = tables;
    b.max_blocks_per_seq = 2;
    b.logits_token_idx = logits_idx;
    return b;
  }
};

StepInputLayout small_layout() {
  StepInputCapacity c;
  c.max_num_tokens = 8;
  c.max_num_seqs = 3;
  c.max_num_logits = 3;
  c.max_blocks_per_seq = 4;
  return StepInputLayout::for_capacity(c);
}

TEST(StepInputsTest, SlotMappingFollowsTheBlockTables) {
  const TwoSeqBatch b;
  std::vector<int32_t> slots(4);
  ASSERT_TRUE(compute_slot_mapping(b.batch(), 16, 8, slots.data()).is_ok());
  // seq 0 position 18 -> logical block 1 = physical 2, offset 2; seq 1 positions 14, 15 in
  // physical block 1, position 16 -> physical block 4 offset 0.
  EXPECT_EQ(slots, (std::vector<int32_t>{2 * 16 + 2, 1 * 16 + 14, 1 * 16 + 15, 4 * 16 + 0}));
}

TEST(StepInputsTest, PacksEveryArrayAtItsOffsetWithTheWiderStride) {
  const TwoSeqBatch b;
  const StepInputLayout layout = small_layout();
  for (size_t offset : {layout.token_ids, layout.positions, layout.slot_mapping, layout.seq_token_start,
                        layout.seq_context_len, layout.logits_token_idx, layout.block_tables})
    EXPECT_EQ(offset % 4, 0u) << "arrays are 16-byte aligned";
  std::vector<int32_t> packed(layout.total, -7);
  auto shape =
      pack_step_inputs(b.batch(), layout, 512, 16, 8, /*block_table_stride=*/4, /*num_stored_tokens=*/3, packed.data());
  ASSERT_TRUE(shape.is_ok()) << shape.status().to_string();
  EXPECT_EQ(shape->num_tokens, 4);
  EXPECT_EQ(shape->num_seqs, 2);
  EXPECT_EQ(shape->num_logits, 2);
  EXPECT_EQ(shape->max_query_len, 3);
  EXPECT_EQ(shape->max_context_len, 19);
  EXPECT_EQ(shape->num_packed_int32, layout.block_tables + 2 * 4);
  auto at = [&](size_t offset, size_t n) {
    return std::vector<int32_t>(packed.begin() + offset, packed.begin() + offset + n);
  };
  EXPECT_EQ(at(layout.token_ids, 4), b.token_ids);
  EXPECT_EQ(at(layout.positions, 4), b.positions);
  // The fourth token is past num_stored_tokens: not stored.
  EXPECT_EQ(at(layout.slot_mapping, 4), (std::vector<int32_t>{34, 30, 31, -1}));
  EXPECT_EQ(at(layout.seq_token_start, 3), b.starts);
  EXPECT_EQ(at(layout.seq_context_len, 2), b.context);
  EXPECT_EQ(at(layout.logits_token_idx, 2), b.logits_idx);
  EXPECT_EQ(at(layout.block_tables, 8), (std::vector<int32_t>{5, 2, 0, 0, 1, 4, 0, 0}));
}

TEST(StepInputsTest, BadBatchesAreNamedErrors) {
  const StepInputLayout layout = small_layout();
  std::vector<int32_t> packed(layout.total);
  auto expect_error = [&](const ForwardBatch& batch, int32_t num_blocks, int32_t stride, const std::string& needle) {
    auto r = pack_step_inputs(batch, layout, 512, 16, num_blocks, stride, batch.num_tokens(), packed.data());
    ASSERT_FALSE(r.is_ok()) << needle;
    EXPECT_NE(r.status().message().find(needle), std::string::npos) << r.status().to_string();
  };
  {
    TwoSeqBatch b;
    b.token_ids[2] = 512;
    expect_error(b.batch(), 8, 2, "outside the vocabulary");
  }
  {
    TwoSeqBatch b;
    expect_error(b.batch(), 5, 2, "block 5");  // block 5 of a 5-block cache
  }
  {
    TwoSeqBatch b;
    b.positions[1] = 13;
    expect_error(b.batch(), 8, 2, "position 13");
  }
  {
    TwoSeqBatch b;
    expect_error(b.batch(), 8, 5, "max-model-len");  // stride above the capacity's 4 blocks
  }
  {
    TwoSeqBatch b;
    b.logits_idx = {0, 1, 2, 3};
    expect_error(b.batch(), 8, 2, "exceed the buffers");
  }
}

TEST(GraphBucketsTest, SizesUpToTheLimit) {
  EXPECT_EQ(graph_bucket_sizes(256), (std::vector<int32_t>{1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 160, 192, 256}));
  EXPECT_EQ(graph_bucket_sizes(512).back(), 256);
  EXPECT_EQ(graph_bucket_sizes(100), (std::vector<int32_t>{1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 100}));
  EXPECT_EQ(graph_bucket_sizes(1), (std::vector<int32_t>{1}));
  EXPECT_TRUE(graph_bucket_sizes(0).empty());
}

TEST(GraphBucketsTest, ChoosesTheSmallestBucketThatFits) {
  const auto buckets = graph_bucket_sizes(100);
  EXPECT_EQ(choose_graph_bucket(buckets, 1), 1);
  EXPECT_EQ(choose_graph_bucket(buckets, 3), 4);
  EXPECT_EQ(choose_graph_bucket(buckets, 17), 24);
  EXPECT_EQ(choose_graph_bucket(buckets, 97), 100);
  EXPECT_EQ(choose_graph_bucket(buckets, 101), -1);
  EXPECT_EQ(choose_graph_bucket(buckets, 0), -1);
}

TEST(GraphBucketsTest, ChoosesTheSmallestContextBoundThatHolds) {
  const std::vector<int32_t> bounds = {1024, 4096, 5000};
  EXPECT_EQ(choose_context_bound(bounds, 1), 1024);
  EXPECT_EQ(choose_context_bound(bounds, 1024), 1024);
  EXPECT_EQ(choose_context_bound(bounds, 1025), 4096);
  EXPECT_EQ(choose_context_bound(bounds, 5000), 5000);
  EXPECT_EQ(choose_context_bound(bounds, 5001), -1);
}

TEST(GraphBucketsTest, DecodeOnlyMeansOneTokenPerSequence) {
  BatchPlan plan;
  EXPECT_FALSE(is_decode_only(plan));
  ScheduledSequence s;
  s.token_ids = {5};
  plan.seqs = {s, s};
  EXPECT_TRUE(is_decode_only(plan));
  plan.seqs[1].token_ids = {5, 6};
  EXPECT_FALSE(is_decode_only(plan));
}

TEST(GraphBucketsTest, PaddingRowsAreSingleTokenSequencesInBlockZero) {
  HostForwardBatch decode;
  decode.clear(3);
  const std::vector<int32_t> token_a = {11}, token_b = {12}, table_a = {7, 8, 9}, table_b = {3};
  decode.add_sequence(token_a, 40, table_a, LogitsWanted::kLast);
  decode.add_sequence(token_b, 3, table_b, LogitsWanted::kLast);
  const ForwardBatch b = decode.view();
  PaddedDecodeBatch padder;
  const ForwardBatch p = padder.build(b, 4);
  EXPECT_EQ(std::vector<int32_t>(p.token_ids.begin(), p.token_ids.end()), (std::vector<int32_t>{11, 12, 0, 0}));
  EXPECT_EQ(std::vector<int32_t>(p.positions.begin(), p.positions.end()), (std::vector<int32_t>{40, 3, 0, 0}));
  EXPECT_EQ(std::vector<int32_t>(p.seq_token_start.begin(), p.seq_token_start.end()),
            (std::vector<int32_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(std::vector<int32_t>(p.seq_context_len.begin(), p.seq_context_len.end()),
            (std::vector<int32_t>{41, 4, 1, 1}));
  EXPECT_EQ(std::vector<int32_t>(p.block_tables.begin(), p.block_tables.end()),
            (std::vector<int32_t>{7, 8, 9, 3, 0, 0, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(std::vector<int32_t>(p.logits_token_idx.begin(), p.logits_token_idx.end()),
            (std::vector<int32_t>{0, 1, 2, 3}));
  // Packed with the real token count stored, the padding rows get slot -1.
  StepInputCapacity c{8, 4, 4, 3};
  const StepInputLayout layout = StepInputLayout::for_capacity(c);
  std::vector<int32_t> packed(layout.total);
  auto shape = pack_step_inputs(p, layout, 512, 16, 10, 3, 2, packed.data());
  ASSERT_TRUE(shape.is_ok()) << shape.status().to_string();
  EXPECT_EQ(std::vector<int32_t>(packed.begin() + layout.slot_mapping, packed.begin() + layout.slot_mapping + 4),
            (std::vector<int32_t>{9 * 16 + 8, 3 * 16 + 3, -1, -1}));
}

}  // namespace
}  // namespace crosspoint
