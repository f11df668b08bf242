// Logprobs through the engine on the toy model: every generated token's entry is the raw
// log-softmax of the logits it was drawn from (no temperature, top-k or top-p), aligned with
// the token ids, for greedy and sampled requests in one batch; requests that do not ask get none.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "engine/engine.h"
#include "engine/toy_model.h"
#include "logprobs_collector.h"
#include "runner/token_logprobs.h"

namespace crosspoint {
namespace {

using testing::kToyVocabSize;
using testing::LogprobsCollector;

EngineConfig config() {
  EngineConfig c;
  c.scheduler.num_blocks = 64;
  c.scheduler.block_size = 4;
  c.scheduler.max_num_seqs = 8;
  c.scheduler.max_num_batched_tokens = 64;
  c.scheduler.max_model_len = 128;
  return c;
}

EngineRequest request(float temperature, int32_t num_logprobs, uint64_t seed) {
  EngineRequest r;
  r.prompt_token_ids = {5, 17, 42, static_cast<int32_t>(seed % kToyVocabSize)};
  r.max_tokens = 12;
  r.ignore_eos = true;
  r.sampling.temperature = temperature;
  r.sampling.top_k = temperature > 0 ? 10 : 0;
  r.sampling.top_p = temperature > 0 ? 0.8f : 1.0f;
  r.sampling.seed = seed;
  r.sampling.num_logprobs = num_logprobs;
  return r;
}

TEST(EngineLogprobs, EachTokensEntryIsTheRawLogSoftmaxOfItsLogits) {
  Engine engine(config(), testing::make_toy_runner(64, 4));
  const EngineRequest requests[] = {request(0.0f, 5, 1), request(1.3f, 3, 2), request(0.7f, 0, 3), request(0.0f, -1, 4),
                                    request(0.9f, 20, 5)};
  std::vector<std::unique_ptr<LogprobsCollector>> collectors;
  for (const EngineRequest& r : requests) {
    collectors.push_back(std::make_unique<LogprobsCollector>());
    ASSERT_TRUE(engine.submit(r, collectors.back()->sink()).is_ok());
  }
  engine.start();
  for (size_t i = 0; i < collectors.size(); ++i) {
    const EngineRequest& r = requests[i];
    LogprobsCollector& c = *collectors[i];
    ASSERT_TRUE(c.wait());
    ASSERT_EQ(c.tokens().size(), static_cast<size_t>(r.max_tokens));
    EXPECT_FALSE(c.misaligned()) << "request " << i;
    if (r.sampling.num_logprobs < 0) {
      EXPECT_TRUE(c.logprobs().empty()) << "request " << i << " did not ask for logprobs";
      continue;
    }
    ASSERT_EQ(c.logprobs().size(), c.tokens().size()) << "request " << i;
    std::vector<int32_t> context = r.prompt_token_ids;
    std::vector<float> logits(kToyVocabSize);
    for (size_t t = 0; t < c.tokens().size(); ++t) {
      testing::toy_reference_logits(context, logits.data());
      const TokenLogprobs want = compute_token_logprobs(logits, c.tokens()[t], r.sampling.num_logprobs);
      const TokenLogprobs& got = c.logprobs()[t];
      EXPECT_EQ(got.chosen.token_id, c.tokens()[t]);
      EXPECT_EQ(got.chosen.logprob, want.chosen.logprob) << "request " << i << " token " << t;
      ASSERT_EQ(got.top.size(), static_cast<size_t>(r.sampling.num_logprobs));
      for (size_t k = 0; k < got.top.size(); ++k) {
        EXPECT_EQ(got.top[k].token_id, want.top[k].token_id);
        EXPECT_EQ(got.top[k].logprob, want.top[k].logprob);
      }
      if (r.sampling.is_greedy() && !got.top.empty()) { EXPECT_EQ(got.top[0].token_id, got.chosen.token_id); }
      context.push_back(c.tokens()[t]);
    }
  }
}

TEST(EngineLogprobs, MoreThanTwentyTopLogprobsAreRefused) {
  Engine engine(config(), testing::make_toy_runner(64, 4));
  LogprobsCollector c;
  EXPECT_FALSE(engine.submit(request(0.0f, kMaxTopLogprobs + 1, 1), c.sink()).is_ok());
  EXPECT_TRUE(engine.submit(request(0.0f, kMaxTopLogprobs, 1), c.sink()).is_ok());
}

}  // namespace
}  // namespace crosspoint
