// The request's plain data: finish reasons by their API names, and what the default sampling
// parameters ask for.
#include <gtest/gtest.h>

#include <cstring>

#include "request/finish_reason.h"
#include "request/sampling_params.h"

namespace crosspoint {
namespace {

TEST(FinishReason, NamesAreTheApisWords) {
  EXPECT_EQ(finish_reason_name(FinishReason::kNone), nullptr);
  EXPECT_STREQ(finish_reason_name(FinishReason::kStop), "stop");
  EXPECT_STREQ(finish_reason_name(FinishReason::kLength), "length");
  EXPECT_STREQ(finish_reason_name(FinishReason::kAbort), "abort");
  EXPECT_STREQ(finish_reason_name(FinishReason::kError), "error");
}

TEST(RequestSamplingParams, DefaultsSampleAtTemperatureOneWithNothingElse) {
  const RequestSamplingParams& p = kDefaultRequestSamplingParams;
  EXPECT_FALSE(p.is_greedy());
  EXPECT_FALSE(p.wants_logprobs());
  EXPECT_FALSE(p.wants_prompt_logprobs());
  EXPECT_FALSE(p.has_penalties());
  EXPECT_FALSE(p.processes_logits());
}

TEST(RequestSamplingParams, PredicatesFollowTheFields) {
  RequestSamplingParams p;
  p.temperature = 0.0f;
  EXPECT_TRUE(p.is_greedy());
  p.num_logprobs = 0;
  EXPECT_TRUE(p.wants_logprobs());
  p.num_prompt_logprobs = 3;
  EXPECT_TRUE(p.wants_prompt_logprobs());
  p.presence_penalty = 0.5f;
  EXPECT_TRUE(p.has_penalties());
  EXPECT_TRUE(p.processes_logits());
  RequestSamplingParams biased;
  biased.logit_bias.push_back({7, -100.0f});
  EXPECT_FALSE(biased.has_penalties());
  EXPECT_TRUE(biased.processes_logits());
}

}  // namespace
}  // namespace crosspoint
