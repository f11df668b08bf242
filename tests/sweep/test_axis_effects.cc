// The report's account of what the fp8 KV cache and prefix caching changed: which labels pair
// up, the per-level changes, capacity and quality, and where the precisions' crossovers lie for
// each way of serving them, on synthetic cells whose answers are known.
#include <gtest/gtest.h>

#include "sweep/axis_effects.h"
#include "sweep/served_label.h"
#include "sweep/sweep_options.h"

namespace crosspoint::sweep {
namespace {

using analysis::CellMeasurement;

CellMeasurement cell(const std::string& label, double concurrency, double ttft, double tpot, double throughput) {
  CellMeasurement c;
  c.precision = label;
  c.concurrency = concurrency;
  c.num_completed = 100;
  c.median_ttft_ms = ttft;
  c.median_tpot_ms = tpot;
  c.output_throughput_tok_s = throughput;
  return c;
}

TEST(ServedLabel, PrefixCachingIsAThirdPart) {
  EXPECT_EQ(served_label("w4a16", "fp8", "on"), "w4a16+kv-fp8+prefix-cache");
  EXPECT_EQ(served_label("fp16", "auto", "off"), "fp16+no-prefix-cache");
  EXPECT_EQ(served_label("fp16", "auto", "default"), "fp16");
  const ServedSetup s = served_setup_of("w8a8-fp8+kv-fp8+no-prefix-cache");
  EXPECT_EQ(s.precision, "w8a8-fp8");
  EXPECT_EQ(s.kv_cache_dtype, "fp8");
  EXPECT_EQ(s.prefix_caching, "off");
  EXPECT_EQ(prefix_caching_of("w4a16+prefix-cache"), "on");
  EXPECT_EQ(prefix_caching_of("w4a16+kv-fp8"), "default");
  EXPECT_EQ(quality_label_of("w4a16+kv-fp8+prefix-cache"), "w4a16+kv-fp8");
  EXPECT_EQ(weight_precision_of("w4a16+kv-fp8+prefix-cache"), "w4a16");
  EXPECT_EQ(served_labels({"fp16", "w4a16"}, {"auto"}, {"off", "on"}),
            (std::vector<std::string>{"fp16+no-prefix-cache", "w4a16+no-prefix-cache", "fp16+prefix-cache",
                                      "w4a16+prefix-cache"}));
}

TEST(ServedLabel, PrefixCachingModesAreCheckedWithTheOptions) {
  SweepOptions o;
  o.report_only = true;
  o.precisions = {"fp16"};
  o.concurrency = {1};
  o.prefix_caching = {"on", "sometimes"};
  EXPECT_NE(validate_sweep_options(o).message().find("'sometimes' (on or off)"), std::string::npos);
  o.prefix_caching = {"on", "on"};
  EXPECT_NE(validate_sweep_options(o).message().find("given twice"), std::string::npos);
  o.prefix_caching = {"off", "on"};
  o.dataset = "prefix_repetition";
  EXPECT_TRUE(validate_sweep_options(o).is_ok()) << validate_sweep_options(o).message();
  o.num_prefixes = 0;
  EXPECT_NE(validate_sweep_options(o).message().find("--num-prefixes"), std::string::npos);
}

TEST(AxisEffects, PairsDifferInExactlyOneAxis) {
  const std::vector<AxisPair> pairs = axis_pairs(served_labels({"fp16", "w4a16"}, {"auto", "fp8"}, {"off", "on"}));
  // Four KV pairs (2 weights x 2 caching modes) and four caching pairs (2 weights x 2 KV dtypes).
  ASSERT_EQ(pairs.size(), 8u);
  int kv = 0, prefix = 0;
  for (const AxisPair& p : pairs) {
    if (p.axis == "kv") {
      ++kv;
      EXPECT_EQ(served_setup_of(p.variant).kv_cache_dtype, "fp8");
      EXPECT_EQ(served_label(weight_precision_of(p.base), "fp8", prefix_caching_of(p.base)), p.variant);
    } else {
      ++prefix;
      EXPECT_EQ(prefix_caching_of(p.base), "off");
      EXPECT_EQ(prefix_caching_of(p.variant), "on");
      EXPECT_EQ(quality_label_of(p.base), quality_label_of(p.variant));
    }
  }
  EXPECT_EQ(kv, 4);
  EXPECT_EQ(prefix, 4);
  EXPECT_TRUE(axis_pairs({"fp16", "w4a16"}).empty());  // no axis: nothing to compare
}

TEST(AxisEffects, ChangesCapacityQualityAndMovedCrossovers) {
  AxisEffectsInputs in;
  in.labels = {"fp16", "w4a16", "fp16+kv-fp8", "w4a16+kv-fp8"};
  // With fp16 KV, w4a16 has the lower TPOT at 1 and fp16 from 64 (a crossover in (1, 64]);
  // with fp8 KV, w4a16 keeps the lead at 64 too (no crossover). Throughput: fp8 KV doubles fp16's at 256.
  in.cells = {cell("fp16", 1, 20, 10, 100),          cell("w4a16", 1, 15, 6, 160),
              cell("fp16", 64, 50, 20, 3000),        cell("w4a16", 64, 60, 25, 2500),
              cell("fp16+kv-fp8", 1, 19, 9.5, 105),  cell("w4a16+kv-fp8", 1, 14, 5.5, 170),
              cell("fp16+kv-fp8", 64, 45, 19, 3200), cell("w4a16+kv-fp8", 64, 40, 15, 4000)};
  in.cells[2].num_preemptions = 12;
  in.cells[6].num_preemptions = 0;
  in.kv_cache_tokens = {{"fp16", 1000}, {"fp16+kv-fp8", 2000}, {"w4a16", 3000}, {"w4a16+kv-fp8", 6000}};
  in.perplexity_delta_pct = {{"w4a16", 1.5}, {"fp16+kv-fp8", 0.7}, {"w4a16+kv-fp8", 2.1}};
  const AxisEffects e = axis_effects(in);
  ASSERT_EQ(e.parts.size(), 2u);
  const AxisEffectPart& fp16 = e.parts[0];
  EXPECT_EQ(fp16.title, "fp8 KV cache: fp16+kv-fp8 against fp16");
  ASSERT_EQ(fp16.facts.size(), 2u);
  EXPECT_EQ(fp16.facts[0], "KV capacity: 1000 → 2000 tokens (2.00x).");
  EXPECT_EQ(fp16.facts[1], "Perplexity against fp16 (crosspoint eval): +0.00 % → +0.70 %.");
  ASSERT_EQ(fp16.table.rows.size(), 2u);
  EXPECT_EQ(fp16.table.rows[1][0], "64");
  EXPECT_EQ(fp16.table.rows[1][1], "50.0 → 45.0 (-10 %)");
  EXPECT_EQ(fp16.table.rows[1][3], "3000 → 3200 (+7 %)");
  EXPECT_EQ(fp16.table.rows[1][4], "12 → 0");
  EXPECT_EQ(fp16.table.header.size(), 5u);  // no hit rate recorded: no column for it
  EXPECT_EQ(e.parts[1].facts[1], "Perplexity against fp16 (crosspoint eval): +1.50 % → +2.10 %.");
  ASSERT_EQ(e.crossover_lines.size(), 2u);
  EXPECT_EQ(e.crossover_lines[0],
            "With the device's own KV cache: median TPOT w4a16 → fp16 between 1 and 64; output throughput w4a16 → "
            "fp16 between 1 and 64.");
  EXPECT_EQ(e.crossover_lines[1],
            "With an fp8 KV cache: median TPOT none, w4a16 leads wherever one leads; output throughput none, w4a16 "
            "leads wherever one leads.");
}

TEST(AxisEffects, PrefixCachingShowsItsHitRate) {
  AxisEffectsInputs in;
  in.labels = {"fp16+no-prefix-cache", "fp16+prefix-cache"};
  in.cells = {cell("fp16+no-prefix-cache", 8, 120, 10, 700), cell("fp16+prefix-cache", 8, 40, 10, 760)};
  in.cells[0].prefix_cache_hit_rate = 0.0;
  in.cells[1].prefix_cache_hit_rate = 0.46;
  const AxisEffects e = axis_effects(in);
  ASSERT_EQ(e.parts.size(), 1u);
  EXPECT_EQ(e.parts[0].title, "Prefix caching: fp16+prefix-cache against fp16+no-prefix-cache");
  EXPECT_TRUE(e.parts[0].facts.empty());
  ASSERT_EQ(e.parts[0].table.header.back(), "prefix-cache hits");
  EXPECT_EQ(e.parts[0].table.rows[0][1], "120 → 40.0 (-67 %)");
  EXPECT_EQ(e.parts[0].table.rows[0].back(), "0 % → 46 %");
  EXPECT_TRUE(e.crossover_lines.empty());  // one weight precision: no crossover to place
}

}  // namespace
}  // namespace crosspoint::sweep
