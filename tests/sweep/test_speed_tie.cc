// What the report serves when the sample cannot tell the precisions' speed apart.
#include <gtest/gtest.h>

#include "sweep/speed_tie.h"

namespace crosspoint::sweep {
namespace {

analysis::LevelWinner undecided_level(double concurrency, std::vector<std::string> ranked,
                                      std::vector<std::string> contenders) {
  analysis::LevelWinner w;
  w.concurrency = concurrency;
  w.leader = ranked[0];
  w.runner_up = ranked[1];
  w.tie = true;
  w.not_separable = true;
  w.ranked = std::move(ranked);
  w.contenders = std::move(contenders);
  return w;
}

QualityResult quality(const std::string& precision, double perplexity) {
  QualityResult q;
  q.precision = precision;
  q.perplexity = perplexity;
  q.reference_perplexity = 20.0;
  return q;
}

TEST(SpeedTie, QualityDecidesAmongTheContendersAndTheSlowerOneIsNamed) {
  // The CI demo's shape: fp16 and w8a8-fp8 overlap at both levels, w4a16 is behind at both.
  const std::vector<analysis::LevelWinner> levels = {
      undecided_level(1, {"fp16", "w8a8-fp8", "w4a16"}, {"fp16", "w8a8-fp8"}),
      undecided_level(2, {"fp16", "w8a8-fp8", "w4a16"}, {"fp16", "w8a8-fp8"})};
  const SpeedTieChoice tie = choose_on_a_speed_tie(levels, {quality("w8a8-fp8", 20.7), quality("w4a16", 30.0)},
                                                   {{"fp16", 0.251}, {"w8a8-fp8", 0.152}, {"w4a16", 0.107}});
  EXPECT_EQ(tie.contenders, (std::vector<std::string>{"fp16", "w8a8-fp8"}));
  EXPECT_EQ(tie.behind, (std::vector<std::string>{"w4a16"}));
  EXPECT_EQ(tie.choice, "fp16");
  EXPECT_FALSE(tie.choice_perplexity_delta_pct.has_value());
  EXPECT_EQ(tie.smallest_weights, "w8a8-fp8");  // w4a16 is not a contender
  const std::string text = speed_tie_sentence(tie, "median TPOT");
  EXPECT_EQ(text,
            "In short: on median TPOT this sample cannot tell fp16 and w8a8-fp8 apart at 1, 2 (w4a16 separably "
            "slower there). Speed does not decide between them here, so quality does: serve fp16 — the reference, "
            "with no quality cost; if memory is the constraint, w8a8-fp8 has the smallest weights (0.152 GiB, "
            "perplexity +3.50 % against fp16). A larger sample (--time-budget, --repeats) may still separate them "
            "on speed.");
}

TEST(SpeedTie, WithoutFp16TheSmallestPerplexityIncreaseWins) {
  const std::vector<analysis::LevelWinner> levels = {
      undecided_level(4, {"w4a16", "w8a8-fp8", "fp16"}, {"w4a16", "w8a8-fp8"})};
  const SpeedTieChoice tie = choose_on_a_speed_tie(levels, {quality("w8a8-fp8", 20.5), quality("w4a16", 21.0)}, {});
  EXPECT_EQ(tie.choice, "w8a8-fp8");
  ASSERT_TRUE(tie.choice_perplexity_delta_pct.has_value());
  EXPECT_NEAR(*tie.choice_perplexity_delta_pct, 2.5, 1e-9);
  EXPECT_NE(speed_tie_sentence(tie, "median TPOT")
                .find("serve w8a8-fp8 — the smallest quality cost among them "
                      "(perplexity +2.50 % against fp16)"),
            std::string::npos);
}

TEST(SpeedTie, AContenderWithoutAQualityResultLeavesTheChoiceOpen) {
  // A level with a winner does not count; at 8 w4a16 has no quality result.
  analysis::LevelWinner decided = undecided_level(1, {"fp16", "w4a16"}, {"fp16"});
  decided.winner = "fp16";
  const std::vector<analysis::LevelWinner> levels = {decided, undecided_level(8, {"w4a16", "fp16"}, {"w4a16", "fp16"})};
  const SpeedTieChoice tie = choose_on_a_speed_tie(levels, {}, {});
  EXPECT_EQ(tie.levels, (std::vector<double>{8}));
  EXPECT_TRUE(tie.choice.empty());
  const std::string text = speed_tie_sentence(tie, "median TPOT");
  EXPECT_EQ(text.find("serve"), std::string::npos) << text;
  EXPECT_NE(text.find("quality was not measured for all of them"), std::string::npos) << text;
}

}  // namespace
}  // namespace crosspoint::sweep
