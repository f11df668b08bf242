// The roofline against the original study (shared/docs/STUDY.md, transcribed into
// tests/fixtures/analysis/study_l4.json) and against the reference formulas of
// shared/docs/reference/kernels-and-roofline.md section 5.
#include <gtest/gtest.h>

#include "analysis/decode_cost.h"
#include "analysis/model_shape.h"
#include "analysis/precision.h"
#include "analysis/roofline.h"
#include "analysis/study_results.h"
#include "study_fixture.h"

namespace crosspoint::analysis {
namespace {

using testing::load_study_or_die;
using testing::study_roofline;

TEST(StudyRoofline, Fp16AtConcurrencyOneMatchesTheStudy) {
  const StudyResults study = load_study_or_die();
  const RooflineCell cell = study_roofline(study, "fp16", 1);
  EXPECT_NEAR(cell.weight_bytes_per_step / 1e9, 15.34, 0.005);  // 14.29 GiB
  EXPECT_NEAR(cell.bound_tpot_ms, 51.1, 0.05);                  // 15.34 GB / 300 GB/s
  EXPECT_NEAR(cell.bandwidth_utilisation * 100, 89.7, 0.05);    // 51.1 / 57.03
  EXPECT_NEAR(cell.compute_utilisation * 100, 0.22, 0.005);     // 0.27 TFLOP/s of 121
  EXPECT_NEAR(cell.critical_intensity, 403, 0.5);               // 121 T / 300 G
  EXPECT_NEAR(cell.arithmetic_intensity, 1.0, 0.05);
  EXPECT_NEAR(cell.flops_per_token / 1e9, 15.2, 0.05);
  EXPECT_NEAR(cell.effective_bandwidth_gb_s, 269, 0.5);
  EXPECT_FALSE(cell.compute_bound);
}

// "Within rounding": the study printed one decimal; it rounded some intermediates, so allow
// 0.1 absolute or 0.2 % relative, whichever is larger.
void expect_within_rounding(double actual, double expected, const std::string& what) {
  const double tolerance = std::max(0.1, 0.002 * std::abs(expected));
  EXPECT_NEAR(actual, expected, tolerance) << what;
}

struct TableRow {
  const char* precision;
  double values[3];  // concurrency 1, 10, 100
};
constexpr double kConcurrencies[3] = {1, 10, 100};

TEST(StudyRoofline, ArithmeticIntensityTable) {
  const StudyResults study = load_study_or_die();
  // Note: the batches of w8a8-fp8 and w4a16 at 10 were themselves derived from this table
  // (the study did not print them), so those two cells only check consistency.
  const TableRow table[] = {
      {"fp16", {1.0, 8.3, 62.3}}, {"w8a8-fp8", {1.7, 14.4, 111.2}}, {"w4a16", {2.7, 21.6, 211.2}}};
  for (const TableRow& row : table) {
    for (int i = 0; i < 3; ++i) {
      const RooflineCell cell = study_roofline(study, row.precision, kConcurrencies[i]);
      expect_within_rounding(cell.arithmetic_intensity, row.values[i],
                             std::string(row.precision) + " @ " + std::to_string(kConcurrencies[i]));
    }
  }
}

TEST(StudyRoofline, BandwidthUtilisationTable) {
  const StudyResults study = load_study_or_die();
  const TableRow table[] = {
      {"fp16", {89.7, 84.3, 52.3}}, {"w8a8-fp8", {83.9, 78.6, 44.0}}, {"w4a16", {67.9, 62.8, 25.1}}};
  for (const TableRow& row : table) {
    for (int i = 0; i < 3; ++i) {
      const RooflineCell cell = study_roofline(study, row.precision, kConcurrencies[i]);
      expect_within_rounding(cell.bandwidth_utilisation * 100, row.values[i],
                             std::string(row.precision) + " @ " + std::to_string(kConcurrencies[i]));
    }
  }
}

TEST(StudyRoofline, Fp16EffectiveBandwidthAndComputeRows) {
  const StudyResults study = load_study_or_die();
  const double bandwidth[3] = {269, 253, 157};
  const double compute_percent[3] = {0.22, 1.72, 8.09};
  for (int i = 0; i < 3; ++i) {
    const RooflineCell cell = study_roofline(study, "fp16", kConcurrencies[i]);
    EXPECT_NEAR(cell.effective_bandwidth_gb_s, bandwidth[i], 0.5) << kConcurrencies[i];
    EXPECT_NEAR(cell.compute_utilisation * 100, compute_percent[i], 0.006) << kConcurrencies[i];
  }
}

TEST(StudyRoofline, BoundsAtConcurrencyOneAndTheDequantisationCost) {
  const StudyResults study = load_study_or_die();
  const RooflineCell fp8 = study_roofline(study, "w8a8-fp8", 1);
  const RooflineCell int4 = study_roofline(study, "w4a16", 1);
  EXPECT_NEAR(fp8.weight_bytes_per_step / 1e9, 8.78, 0.005);
  EXPECT_NEAR(fp8.bound_tpot_ms, 29.3, 0.05);
  EXPECT_NEAR(int4.weight_bytes_per_step / 1e9, 5.66, 0.005);
  EXPECT_NEAR(int4.bound_tpot_ms, 18.9, 0.05);
  // "W4A16 is ~9 ms over its bound even with Marlin".
  EXPECT_NEAR(int4.overhead_ms, 8.9, 0.1);
  // W8A8 runs fp8 math: its ridge point uses the fp8 peak (242 TFLOP/s) -> 807.
  EXPECT_NEAR(fp8.critical_intensity, 807, 1);
  EXPECT_FALSE(fp8.peak_fell_back_to_fp16);
}

TEST(RooflineFromShape, Qwen25_7bMatchesTheReferenceTable) {
  auto shape = load_model_shape(std::string(CROSSPOINT_FIXTURES_DIR) + "/analysis/qwen2_5_7b_config.json");
  ASSERT_TRUE(shape.is_ok()) << shape.status().to_string();
  EXPECT_EQ(shape->linear_params(), 6525288448);
  EXPECT_EQ(shape->head_params(), 544997376);
  EXPECT_EQ(shape->total_params(), 7615616512);          // the published parameter count
  EXPECT_EQ(shape->kv_elements_per_token() * 2, 57344);  // bf16 KV bytes per token
  EXPECT_EQ(shape->attention_flops_per_context_token(), 401408);
  // Weight bytes per step (reference table: 14.14, 7.62, ~4.48 GB).
  EXPECT_NEAR(decode_cost_from_shape(*shape, Precision::kFp16).weight_bytes_per_step / 1e9, 14.14, 0.01);
  EXPECT_NEAR(decode_cost_from_shape(*shape, Precision::kW8A8Fp8).weight_bytes_per_step / 1e9, 7.62, 0.01);
  EXPECT_NEAR(decode_cost_from_shape(*shape, Precision::kW4A16).weight_bytes_per_step / 1e9, 4.48, 0.01);
  // H200 floor for bf16: 2.95 ms.
  CellMeasurement cell;
  cell.precision = "fp16";
  cell.concurrency = 1;
  const RooflineCell roof = analyze_cell(cell, Precision::kFp16, decode_cost_from_shape(*shape, Precision::kFp16),
                                         find_datasheet("H200").value());
  EXPECT_NEAR(roof.bound_tpot_ms, 2.95, 0.01);
}

TEST(RooflineFromShape, KvAtMeanContextAddsBytesAndAttentionFlops) {
  auto shape = load_model_shape(std::string(CROSSPOINT_FIXTURES_DIR) + "/analysis/qwen2_5_7b_config.json");
  ASSERT_TRUE(shape.is_ok());
  const DecodeCost cost = decode_cost_from_shape(*shape, Precision::kFp16);
  CellMeasurement cell;
  cell.precision = "fp16";
  cell.concurrency = 100;
  cell.mean_running_batch = 64;
  cell.mean_context_tokens = 4096;
  cell.median_tpot_ms = 100;
  const RooflineCell roof = analyze_cell(cell, Precision::kFp16, cost, find_datasheet("L4").value());
  EXPECT_DOUBLE_EQ(roof.kv_bytes_per_step, 64.0 * 4096 * 57344);
  EXPECT_DOUBLE_EQ(roof.bytes_per_step, roof.weight_bytes_per_step + roof.kv_bytes_per_step);
  // Attention at c = 4096: 1.64 GFLOP per token beside 14.1 GFLOP of weights.
  EXPECT_NEAR((roof.flops_per_token - cost.flops_per_token) / 1e9, 1.64, 0.01);
  EXPECT_NEAR(roof.memory_bound_tpot_ms, roof.bytes_per_step / 300e9 * 1e3, 1e-9);
}

// Qwen2.5-7B over two ranks: half the weights, KV heads and FLOPs a rank, and the all-reduces'
// bytes (2 per layer of a 3,584-wide fp16 row, a ring sending 2 (n - 1) / n of it, and the logits
// gather: half of a 152,064-wide fp16 row).
TEST(RooflineFromShape, ASplitIsOneRanksShareWithItsAllReduces) {
  auto shape = load_model_shape(std::string(CROSSPOINT_FIXTURES_DIR) + "/analysis/qwen2_5_7b_config.json");
  ASSERT_TRUE(shape.is_ok());
  const DecodeCost whole = decode_cost_from_shape(*shape, Precision::kFp16);
  const DecodeCost rank = split_decode_cost(whole, &*shape, 2);
  EXPECT_EQ(rank.tensor_parallel_size, 2);
  EXPECT_DOUBLE_EQ(rank.weight_bytes_per_step, whole.weight_bytes_per_step / 2);
  EXPECT_DOUBLE_EQ(rank.flops_per_token, whole.flops_per_token / 2);
  EXPECT_DOUBLE_EQ(rank.kv_bytes_per_context_token, whole.kv_bytes_per_context_token / 2);
  EXPECT_DOUBLE_EQ(rank.all_reduce_bytes_per_token, 2.0 * 28 * 3584 * 2 * 1.0 + 152064 * 2 * 0.5);
  // Past the 4 KV heads each rank holds one whole head: a quarter, not an eighth.
  EXPECT_DOUBLE_EQ(split_decode_cost(whole, &*shape, 8).kv_bytes_per_context_token,
                   whole.kv_bytes_per_context_token / 4);
  EXPECT_DOUBLE_EQ(split_decode_cost(whole, &*shape, 1).weight_bytes_per_step, whole.weight_bytes_per_step);
  CellMeasurement cell;
  cell.precision = "fp16-tp2";
  cell.concurrency = 1;
  const RooflineCell roof = analyze_cell(cell, Precision::kFp16, rank, find_datasheet("H200").value());
  EXPECT_NEAR(roof.bound_tpot_ms, 2.95 / 2, 0.01);  // each H200 streams half the weights
  EXPECT_EQ(roof.tensor_parallel_size, 2);
  EXPECT_DOUBLE_EQ(roof.all_reduce_bytes_per_step, rank.all_reduce_bytes_per_token);
}

TEST(RooflineBatch, DecodeStepsNotTheWholeRunMean) {
  const DecodeCost cost = decode_cost_from_params(1e9, Precision::kFp16);
  CellMeasurement cell;
  cell.precision = "fp16";
  cell.concurrency = 1;
  cell.num_completed = 8;
  cell.mean_running_batch = 0.2;  // a concurrency-1 run sampled mostly between requests
  const RooflineCell raised = analyze_cell(cell, Precision::kFp16, cost, find_datasheet("L4").value());
  EXPECT_DOUBLE_EQ(raised.batch, 1.0);
  EXPECT_TRUE(raised.batch_raised_to_one);
  cell.busy_running_batch = 1.0;  // the bench's samples while a request ran
  const RooflineCell busy = analyze_cell(cell, Precision::kFp16, cost, find_datasheet("L4").value());
  EXPECT_DOUBLE_EQ(busy.batch, 1.0);
  EXPECT_FALSE(busy.batch_raised_to_one);
  cell.busy_running_batch = 3.5;
  EXPECT_DOUBLE_EQ(analyze_cell(cell, Precision::kFp16, cost, find_datasheet("L4").value()).batch, 3.5);
}

TEST(RooflineBounds, LargeBatchBecomesComputeBound) {
  // 1 G params fp16 on an L4: the ridge (403 FLOP/byte) is at batch ~403.
  const DecodeCost cost = decode_cost_from_params(1e9, Precision::kFp16);
  CellMeasurement cell;
  cell.precision = "fp16";
  cell.concurrency = 512;
  const RooflineCell roof = analyze_cell(cell, Precision::kFp16, cost, find_datasheet("L4").value());
  EXPECT_FALSE(roof.batch_measured);
  EXPECT_DOUBLE_EQ(roof.batch, 512);
  EXPECT_TRUE(roof.compute_bound);
  EXPECT_NEAR(roof.bound_tpot_ms, 512 * 2e9 / 121e12 * 1e3, 1e-9);
  cell.concurrency = 300;
  EXPECT_FALSE(analyze_cell(cell, Precision::kFp16, cost, find_datasheet("L4").value()).compute_bound);
}

TEST(Precision, BytesAndPeaks) {
  EXPECT_DOUBLE_EQ(linear_weight_bytes(Precision::kFp16, 256, 128), 2.0 * 256 * 128);
  EXPECT_DOUBLE_EQ(linear_weight_bytes(Precision::kW8A8Fp8, 256, 128), 256.0 * 128 + 4 * 256);
  // 300 inputs at group 128 = 3 groups (the last one partial).
  EXPECT_DOUBLE_EQ(linear_weight_bytes(Precision::kW4A16, 10, 300), 0.5 * 3000 + 3 * 10 * 2.5);
  EXPECT_NEAR(bytes_per_weight(Precision::kW4A16), 0.5195, 1e-4);
  bool fell_back = false;
  EXPECT_DOUBLE_EQ(math_peak_tflops(Precision::kW8A8Fp8, find_datasheet("A100 80GB").value(), &fell_back), 312);
  EXPECT_TRUE(fell_back);
  EXPECT_EQ(parse_precision("GPTQ").value(), Precision::kW4A16);
  EXPECT_EQ(parse_precision("bf16").value(), Precision::kFp16);
  EXPECT_EQ(parse_precision("fp8").value(), Precision::kW8A8Fp8);
  EXPECT_FALSE(parse_precision("int3").is_ok());
}

TEST(ModelShape, BadConfigsNameTheField) {
  auto missing = parse_model_shape(R"({"hidden_size": 64})", "cfg.json");
  ASSERT_FALSE(missing.is_ok());
  EXPECT_NE(missing.status().message().find("cfg.json"), std::string::npos);
  EXPECT_NE(missing.status().message().find("num_hidden_layers"), std::string::npos);
  auto negative = parse_model_shape(
      R"({"num_hidden_layers": 2, "hidden_size": -64, "intermediate_size": 1, "num_attention_heads": 1, "vocab_size": 5})",
      "cfg.json");
  ASSERT_FALSE(negative.is_ok());
  EXPECT_NE(negative.status().message().find("hidden_size"), std::string::npos);
  EXPECT_FALSE(parse_model_shape("{not json", "cfg.json").is_ok());
  EXPECT_EQ(load_model_shape("/nonexistent/dir").status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace crosspoint::analysis
