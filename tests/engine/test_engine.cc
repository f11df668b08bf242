#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "engine/engine.h"
#include "engine/toy_model.h"
#include "kernels/sampling.h"
#include "runner/request_sampler.h"

namespace crosspoint {
namespace {

using testing::kToyEosTokenId;
using testing::kToyVocabSize;

// Collects every request's updates; wait() blocks until all submitted requests finished.
class Collector {
 public:
  OutputSink sink() {
    return [this](const RequestOutput& out) {
      std::lock_guard<std::mutex> lock(mutex_);
      Record& r = records_[out.request_id];
      r.tokens.insert(r.tokens.end(), out.new_token_ids.begin(), out.new_token_ids.end());
      ++r.num_updates;
      if (out.finished) {
        r.finished = true;
        r.reason = out.finish_reason;
        r.stop_token_id = out.stop_token_id;
        r.num_output_tokens = out.num_output_tokens;
        ++num_finished_;
        done_.notify_all();
      }
    };
  }
  bool wait(int num_requests, double timeout_s = 30) {
    std::unique_lock<std::mutex> lock(mutex_);
    return done_.wait_for(lock, std::chrono::duration<double>(timeout_s),
                          [&] { return num_finished_ >= num_requests; });
  }
  struct Record {
    std::vector<int32_t> tokens;
    bool finished = false;
    FinishReason reason = FinishReason::kNone;
    int32_t stop_token_id = -1;
    int32_t num_output_tokens = 0;
    int num_updates = 0;
  };
  Record get(int64_t id) {
    std::lock_guard<std::mutex> lock(mutex_);
    return records_[id];
  }

 private:
  std::mutex mutex_;
  std::condition_variable done_;
  std::map<int64_t, Record> records_;
  int num_finished_ = 0;
};

// The output the toy model gives with no engine, cache or batching at all.
std::vector<int32_t> reference_generate(const EngineRequest& r, const std::vector<int32_t>& eos) {
  std::vector<int32_t> context = r.prompt_token_ids, out;
  std::vector<float> logits(kToyVocabSize);
  while (static_cast<int32_t>(out.size()) < r.max_tokens) {
    testing::toy_reference_logits(context, logits.data());
    const int32_t token = sample_request_token(logits.data(), kToyVocabSize, r.sampling,
                                               static_cast<int32_t>(out.size()), r.prompt_token_ids, out);
    out.push_back(token);
    context.push_back(token);
    if (!r.ignore_eos && std::find(eos.begin(), eos.end(), token) != eos.end()) break;
    if (std::find(r.stop_token_ids.begin(), r.stop_token_ids.end(), token) != r.stop_token_ids.end()) break;
  }
  return out;
}

EngineConfig toy_config(int32_t num_blocks, int32_t block_size, int32_t max_num_seqs, int32_t max_batched) {
  EngineConfig config;
  config.scheduler.num_blocks = num_blocks;
  config.scheduler.block_size = block_size;
  config.scheduler.max_num_seqs = max_num_seqs;
  config.scheduler.max_num_batched_tokens = max_batched;
  config.scheduler.max_model_len = 256;
  config.eos_token_ids = {kToyEosTokenId};
  return config;
}

std::vector<EngineRequest> mixed_requests(int n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<EngineRequest> requests;
  for (int i = 0; i < n; ++i) {
    EngineRequest r;
    const int prompt_len = 1 + static_cast<int>(rng() % 40);
    for (int t = 0; t < prompt_len; ++t) r.prompt_token_ids.push_back(static_cast<int32_t>(rng() % kToyVocabSize));
    r.max_tokens = 1 + static_cast<int32_t>(rng() % 30);
    r.ignore_eos = (i % 3) != 0;
    if (i % 2 == 0) {
      r.sampling.temperature = 0.0f;
    } else {
      r.sampling.temperature = 0.7f + 0.1f * static_cast<float>(i % 4);
      r.sampling.top_p = (i % 4 == 1) ? 0.9f : 1.0f;
      r.sampling.top_k = (i % 5 == 1) ? 20 : 0;
      r.sampling.seed = 1000 + static_cast<uint64_t>(i);
    }
    requests.push_back(std::move(r));
  }
  return requests;
}

// Runs every request at once through one engine; returns outputs in request order.
std::vector<std::vector<int32_t>> run_concurrently(const EngineConfig& config,
                                                   const std::vector<EngineRequest>& requests,
                                                   EngineMetrics* metrics_out = nullptr) {
  Engine engine(config, testing::make_toy_runner(config.scheduler.num_blocks, config.scheduler.block_size));
  Collector collector;
  std::vector<int64_t> ids;
  for (const auto& r : requests) {
    auto id = engine.submit(r, collector.sink());
    EXPECT_TRUE(id.is_ok()) << id.status().to_string();
    ids.push_back(id.is_ok() ? *id : -1);
  }
  engine.start();
  EXPECT_TRUE(collector.wait(static_cast<int>(requests.size())));
  std::vector<std::vector<int32_t>> outputs;
  for (int64_t id : ids) outputs.push_back(collector.get(id).tokens);
  // The loop publishes its gauges after the step that finished the last request; the bound only
  // keeps a broken engine from hanging the test (a loaded or sanitised run may need seconds).
  for (int i = 0; i < 2000 && engine.metrics().num_free_blocks != config.scheduler.num_blocks; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (metrics_out != nullptr) *metrics_out = engine.metrics();
  return outputs;
}

TEST(Engine, ConcurrentOutputsEqualTheReferenceOneAtATime) {
  const auto requests = mixed_requests(24, 7);
  EngineMetrics metrics;
  const auto outputs = run_concurrently(toy_config(256, 4, 8, 32), requests, &metrics);
  for (size_t i = 0; i < requests.size(); ++i) {
    EXPECT_EQ(outputs[i], reference_generate(requests[i], {kToyEosTokenId})) << "request " << i;
  }
  EXPECT_EQ(metrics.num_free_blocks, 256);
  EXPECT_GT(metrics.iteration_num_seqs.sum / metrics.iteration_num_seqs.count, 1.5) << "batching happened";
  EXPECT_EQ(metrics.time_to_first_token_seconds.count, requests.size());
}

TEST(Engine, ForcedPreemptionGivesIdenticalOutputsAndFreesEveryBlock) {
  const auto requests = mixed_requests(24, 8);
  EngineMetrics metrics;
  // 20 blocks of 4 tokens: far less than 8 sequences of up to 70 tokens need.
  const auto outputs = run_concurrently(toy_config(20, 4, 8, 16), requests, &metrics);
  for (size_t i = 0; i < requests.size(); ++i) {
    EXPECT_EQ(outputs[i], reference_generate(requests[i], {kToyEosTokenId})) << "request " << i;
  }
  EXPECT_GT(metrics.num_preemptions, 0u);
  EXPECT_EQ(metrics.num_free_blocks, 20);
}

// Requests that bias and penalise their logits and cut by min-p, greedy and sampled: each
// sequence's penalties read its own prompt and output only, so batching and preemption change
// nothing, and the processing is really applied (the outputs differ from the plain requests').
std::vector<EngineRequest> processed_requests(int n, uint32_t seed) {
  std::vector<EngineRequest> requests = mixed_requests(n, seed);
  for (size_t i = 0; i < requests.size(); ++i) {
    RequestSamplingParams& s = requests[i].sampling;
    s.repetition_penalty = (i % 3 == 0) ? 1.5f : 1.0f;
    s.frequency_penalty = (i % 4 == 1) ? 0.8f : (i % 4 == 3 ? -0.4f : 0.0f);
    s.presence_penalty = (i % 5 == 2) ? 1.2f : 0.0f;
    if (i % 6 == 4) s.logit_bias = {{static_cast<int32_t>(i % kToyVocabSize), 4.0f}, {kToyEosTokenId, -100.0f}};
    if (!s.is_greedy() && i % 2 == 1) s.min_p = 0.1f;
    if (!s.processes_logits() && s.min_p == 0.0f) s.presence_penalty = 0.5f;
    requests[i].max_tokens = std::max(requests[i].max_tokens, 12);
  }
  return requests;
}

TEST(Engine, PenaltiesBiasAndMinPGiveTheSameTokensAloneBatchedAndPreempted) {
  const auto requests = processed_requests(24, 11);
  EngineMetrics metrics;
  const auto batched = run_concurrently(toy_config(256, 4, 8, 32), requests);
  const auto preempted = run_concurrently(toy_config(20, 4, 8, 16), requests, &metrics);
  EXPECT_GT(metrics.num_preemptions, 0u);
  int changed = 0;
  for (size_t i = 0; i < requests.size(); ++i) {
    const auto alone = reference_generate(requests[i], {kToyEosTokenId});
    EXPECT_EQ(batched[i], alone) << "request " << i;
    EXPECT_EQ(preempted[i], alone) << "request " << i;
    EngineRequest plain = requests[i];
    plain.sampling.logit_bias.clear();
    plain.sampling.repetition_penalty = 1.0f;
    plain.sampling.frequency_penalty = plain.sampling.presence_penalty = plain.sampling.min_p = 0.0f;
    changed += reference_generate(plain, {kToyEosTokenId}) != alone ? 1 : 0;
  }
  EXPECT_GT(changed, 12) << "the processing changed too few outputs to be exercised";
}

TEST(Engine, FinishReasons) {
  Engine engine(toy_config(64, 4, 4, 64), testing::make_toy_runner(64, 4));
  engine.start();
  Collector collector;
  EngineRequest base;
  base.prompt_token_ids = {5, 6, 7};
  base.sampling.temperature = 0.0f;
  base.max_tokens = 6;
  base.ignore_eos = true;
  const auto greedy = reference_generate(base, {});
  // max_tokens -> length
  const int64_t a = engine.submit(base, collector.sink()).value();
  // a stop token id -> stop, reported, included in the output ids
  EngineRequest with_stop = base;
  with_stop.stop_token_ids = {greedy[2]};
  const int64_t b = engine.submit(with_stop, collector.sink()).value();
  // the third token made EOS -> stop without a stop_token_id, unless ignore_eos
  EngineConfig eos_config = toy_config(64, 4, 4, 64);
  eos_config.eos_token_ids = {greedy[2]};
  Engine eos_engine(eos_config, testing::make_toy_runner(64, 4));
  eos_engine.start();
  Collector eos_collector;
  EngineRequest stops_at_eos = base;
  stops_at_eos.ignore_eos = false;
  const int64_t c = eos_engine.submit(stops_at_eos, eos_collector.sink()).value();
  ASSERT_TRUE(collector.wait(2));
  ASSERT_TRUE(eos_collector.wait(1));
  EXPECT_EQ(collector.get(a).tokens, greedy);
  EXPECT_EQ(collector.get(a).reason, FinishReason::kLength);
  EXPECT_EQ(collector.get(a).num_output_tokens, 6);
  EXPECT_EQ(collector.get(b).tokens, std::vector<int32_t>(greedy.begin(), greedy.begin() + 3));
  EXPECT_EQ(collector.get(b).reason, FinishReason::kStop);
  EXPECT_EQ(collector.get(b).stop_token_id, greedy[2]);
  EXPECT_EQ(eos_collector.get(c).tokens, std::vector<int32_t>(greedy.begin(), greedy.begin() + 3));
  EXPECT_EQ(eos_collector.get(c).reason, FinishReason::kStop);
  EXPECT_EQ(eos_collector.get(c).stop_token_id, -1);
}

TEST(Engine, AbortEndsARequestAndFreesItsBlocks) {
  Engine engine(toy_config(64, 4, 4, 64), testing::make_toy_runner(64, 4));
  Collector collector;
  std::mutex mutex;
  std::condition_variable changed;
  int tokens_seen = 0;
  bool abort_sent = false;
  EngineRequest r;
  r.prompt_token_ids = std::vector<int32_t>(30, 9);
  r.max_tokens = 200;
  r.ignore_eos = true;
  auto inner = collector.sink();
  // The engine thread waits in the sink from the third token until the abort is queued: the toy
  // model would otherwise finish all 200 tokens before this thread is scheduled again.
  auto id = engine.submit(r, [&](const RequestOutput& out) {
    inner(out);
    std::unique_lock<std::mutex> lock(mutex);
    tokens_seen += static_cast<int>(out.new_token_ids.size());
    changed.notify_all();
    if (!out.finished && tokens_seen >= 3) changed.wait(lock, [&] { return abort_sent; });
  });
  ASSERT_TRUE(id.is_ok());
  engine.start();
  {
    std::unique_lock<std::mutex> lock(mutex);
    changed.wait(lock, [&] { return tokens_seen >= 3; });
  }
  engine.abort(*id);
  {
    std::lock_guard<std::mutex> lock(mutex);
    abort_sent = true;
  }
  changed.notify_all();
  ASSERT_TRUE(collector.wait(1));
  EXPECT_EQ(collector.get(*id).reason, FinishReason::kAbort);
  EXPECT_LT(collector.get(*id).tokens.size(), 200u);
  for (int i = 0; i < 2000 && engine.metrics().num_free_blocks != 64; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(engine.metrics().num_free_blocks, 64);
  EXPECT_EQ(engine.metrics().request_success["abort"], 1u);
  engine.abort(*id);  // twice: ignored
  engine.abort(12345);
}

TEST(Engine, RefusesWhatCanNeverRunAndAnOverfullQueue) {
  EngineConfig config = toy_config(8, 4, 2, 64);
  config.max_waiting = 2;
  Engine engine(config, testing::make_toy_runner(8, 4));  // not started: nothing leaves the queue
  EngineRequest r;
  r.prompt_token_ids = {1, 2, 3};
  r.max_tokens = 300;
  EXPECT_EQ(engine.submit(r, nullptr).status().code(), StatusCode::kInvalidArgument);
  r.max_tokens = 30;  // 33 tokens > 32 KV tokens
  EXPECT_EQ(engine.submit(r, nullptr).status().code(), StatusCode::kResourceExhausted);
  r.max_tokens = 4;
  Collector collector;
  EXPECT_TRUE(engine.submit(r, collector.sink()).is_ok());
  EXPECT_TRUE(engine.submit(r, collector.sink()).is_ok());
  auto third = engine.submit(r, collector.sink());
  EXPECT_EQ(third.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(third.status().message().find("waiting"), std::string::npos);
  engine.stop();  // the queued ones get an abort
  EXPECT_TRUE(collector.wait(2, 1));
  EXPECT_EQ(engine.submit(r, nullptr).status().code(), StatusCode::kUnavailable);
}

TEST(Engine, RefusesPromptIdsOutsideTheModelVocabulary) {
  EngineConfig config = toy_config(8, 4, 2, 64);
  config.vocab_size = 8;
  Engine engine(config, testing::make_toy_runner(8, 4));
  EngineRequest r;
  r.max_tokens = 2;
  r.prompt_token_ids = {1, 8};
  const auto refused = engine.submit(r, nullptr);
  ASSERT_FALSE(refused.is_ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("token id 8"), std::string::npos);
  r.prompt_token_ids = {-1};
  EXPECT_EQ(engine.submit(r, nullptr).status().code(), StatusCode::kInvalidArgument);
  r.prompt_token_ids = {0, 7};
  Collector collector;
  EXPECT_TRUE(engine.submit(r, collector.sink()).is_ok());
  engine.stop();  // the queued request gets its abort
  EXPECT_TRUE(collector.wait(1, 1));
}

TEST(Engine, RefusalsNameTheFieldAtFault) {
  EngineConfig config = toy_config(8, 4, 2, 64);
  config.vocab_size = 8;
  Engine engine(config, testing::make_toy_runner(8, 4));
  EngineRequest r;
  r.prompt_token_ids = {1, 2};
  r.max_tokens = 2;
  EXPECT_FALSE(engine.validate(r).has_value());
  const auto field_of = [&](const EngineRequest& request) {
    auto refusal = engine.validate(request);
    EXPECT_TRUE(refusal.has_value());
    return refusal ? refusal->field : RefusedField::kPrompt;
  };
  EngineRequest bad = r;
  bad.prompt_token_ids = {9};
  EXPECT_EQ(field_of(bad), RefusedField::kPrompt);
  bad.prompt_token_ids.clear();
  EXPECT_EQ(field_of(bad), RefusedField::kPrompt);
  bad = r;
  bad.max_tokens = 300;
  EXPECT_EQ(field_of(bad), RefusedField::kMaxTokens);
  bad.max_tokens = 31;  // beyond the whole KV cache
  EXPECT_EQ(field_of(bad), RefusedField::kMaxTokens);
  EXPECT_EQ(engine.validate(bad)->status.code(), StatusCode::kResourceExhausted);
  bad = r;
  bad.sampling.num_logprobs = 21;
  EXPECT_EQ(field_of(bad), RefusedField::kLogprobs);
  bad = r;
  bad.sampling.num_prompt_logprobs = 21;
  EXPECT_EQ(field_of(bad), RefusedField::kPromptLogprobs);
  EXPECT_EQ(engine.submit(bad, nullptr).status().message(), engine.validate(bad)->status.message());
}

TEST(Engine, SubmitsFromManyThreads) {
  Engine engine(toy_config(128, 8, 16, 64), testing::make_toy_runner(128, 8));
  engine.start();
  Collector collector;
  const auto requests = mixed_requests(32, 9);
  std::vector<int64_t> ids(requests.size());
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (size_t i = t; i < requests.size(); i += 4) ids[i] = engine.submit(requests[i], collector.sink()).value();
    });
  }
  for (auto& th : threads) th.join();
  ASSERT_TRUE(collector.wait(32));
  for (size_t i = 0; i < requests.size(); ++i) {
    EXPECT_EQ(collector.get(ids[i]).tokens, reference_generate(requests[i], {kToyEosTokenId}));
  }
}

}  // namespace
}  // namespace crosspoint
