// The scheduler driven by simulated workloads, no model (ARCHITECTURE rule 8). A fake KV
// store records which token each (block, slot) holds; whenever a token is "sampled", the
// whole context is read back through the block table and must equal the sequence's tokens.
// The sampled token is a pure function of (seq, output index), like a seeded sampler, so a
// preempted sequence must reproduce its exact output. With prefix caching, blocks shared by
// several sequences must hold the same tokens for each of them (the read-back checks it) and
// carry one reference per table.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "scheduler/scheduler.h"

namespace crosspoint {
namespace {

int32_t fake_token(int64_t seq_id, int32_t output_idx) {
  return static_cast<int32_t>((seq_id * 7919 + output_idx * 104729) % 50000);
}

struct SimRequest {
  int64_t seq_id;
  std::vector<int32_t> prompt;
  int32_t max_new_tokens;
  int arrival_step;
  std::string cache_salt;  // empty = none
};

struct SimResult {
  std::map<int64_t, std::vector<int32_t>> outputs;
  std::vector<int64_t> admission_order;  // first time each sequence is scheduled
  int64_t num_preemptions = 0;
  int num_steps = 0;
  int max_batch_seqs = 0;
  bool saw_mixed_prefill_and_decode = false;
  int64_t prefix_cache_hits = 0;  // tokens
  int64_t prefix_cache_queries = 0;
  int64_t prefill_tokens = 0;  // prompt (and recomputed) tokens the fake model computed
};

// Runs the workload to completion, checking every invariant at every step.
SimResult simulate(const SchedulerConfig& config, const std::vector<SimRequest>& requests) {
  Scheduler scheduler(config);
  // (block, slot) -> token id written there by the fake model.
  std::vector<std::vector<int32_t>> kv(config.num_blocks, std::vector<int32_t>(config.block_size, -1));
  // (block, slot) -> cache salt of the request whose step wrote it.
  std::vector<std::vector<std::string>> kv_salt(config.num_blocks, std::vector<std::string>(config.block_size));
  std::map<int64_t, const SimRequest*> by_id;
  for (const auto& r : requests) by_id[r.seq_id] = &r;
  SimResult result;
  std::set<int64_t> admitted;
  size_t next_request = 0;
  for (int step = 0; step < 100000; ++step) {
    while (next_request < requests.size() && requests[next_request].arrival_step <= step) {
      const auto& r = requests[next_request++];
      EXPECT_TRUE(scheduler.add(r.seq_id, r.prompt, r.max_new_tokens, RequestSamplingParams{}, r.cache_salt).is_ok());
    }
    if (!scheduler.has_unfinished() && next_request == requests.size()) break;
    BatchPlan plan = scheduler.schedule();
    result.num_steps = step + 1;
    // Token budget and sequence limit.
    EXPECT_LE(plan.num_batched_tokens, config.max_num_batched_tokens);
    EXPECT_LE(static_cast<int>(plan.seqs.size()), config.max_num_seqs);
    result.max_batch_seqs = std::max(result.max_batch_seqs, static_cast<int>(plan.seqs.size()));
    int32_t sum = 0;
    bool has_decode = false, has_prefill = false;
    // A block is in as many tables as it has references (more than one only when cached
    // prompt blocks are shared), and used + free == total.
    std::map<int32_t, int32_t> owned;  // block -> tables holding it
    for (const auto& s : plan.seqs) {
      sum += s.num_new_tokens();
      EXPECT_GT(s.num_new_tokens(), 0);
      EXPECT_GE(static_cast<int32_t>(s.block_table.size()) * config.block_size, s.context_len());
      for (int32_t b : s.block_table) ++owned[b];
    }
    for (const auto& [b, tables] : owned) {
      if (!config.enable_prefix_caching) EXPECT_EQ(tables, 1) << "block " << b << " owned twice at step " << step;
      // Running sequences left out of this step's plan hold references too: a block's
      // references may exceed the tables seen here, never fall below.
      EXPECT_GE(scheduler.block_manager().ref_count(b), tables) << "block " << b << " at step " << step;
    }
    for (const auto& s : plan.seqs) {
      const Sequence* seq = scheduler.find(s.seq_id);
      if (seq == nullptr) {
        ADD_FAILURE() << "scheduled sequence " << s.seq_id << " unknown";
        return result;
      }
      if (s.num_new_tokens() == 1 && seq->num_output_tokens() > 0 && s.sample) has_decode = true;
      else has_prefill = true;
      if (admitted.insert(s.seq_id).second) result.admission_order.push_back(s.seq_id);
    }
    EXPECT_EQ(sum, plan.num_batched_tokens);
    if (has_decode && has_prefill) result.saw_mixed_prefill_and_decode = true;
    result.num_preemptions = scheduler.num_preemptions();
    result.prefill_tokens += plan.num_prefill_tokens;
    EXPECT_LE(static_cast<int32_t>(owned.size()), scheduler.block_manager().num_used_blocks());
    // Fake forward: write each new token into its slot, then read back the context.
    std::vector<int32_t> sampled(plan.seqs.size(), -1);
    for (size_t i = 0; i < plan.seqs.size(); ++i) {
      const auto& s = plan.seqs[i];
      for (int32_t t = 0; t < s.num_new_tokens(); ++t) {
        const int32_t pos = s.num_computed_tokens + t;
        kv[s.block_table[pos / config.block_size]][pos % config.block_size] = s.token_ids[t];
        kv_salt[s.block_table[pos / config.block_size]][pos % config.block_size] = by_id[s.seq_id]->cache_salt;
      }
      if (!s.sample) continue;
      const Sequence* seq = scheduler.find(s.seq_id);
      for (int32_t pos = 0; pos < s.context_len(); ++pos) {
        if (kv[s.block_table[pos / config.block_size]][pos % config.block_size] != seq->token_ids[pos]) {
          ADD_FAILURE() << "KV of seq " << s.seq_id << " pos " << pos << " at step " << step << " holds another token";
          return result;
        }
        if (kv_salt[s.block_table[pos / config.block_size]][pos % config.block_size] != by_id[s.seq_id]->cache_salt) {
          ADD_FAILURE() << "KV of seq " << s.seq_id << " pos " << pos << " at step " << step
                        << " was computed by a request with another cache salt";
          return result;
        }
      }
      sampled[i] = fake_token(s.seq_id, s.output_token_idx);
    }
    scheduler.on_step_done(plan, sampled);
    for (const auto& s : plan.seqs) {
      const Sequence* seq = scheduler.find(s.seq_id);
      if (seq->num_output_tokens() >= by_id[s.seq_id]->max_new_tokens) {
        result.outputs[s.seq_id] =
            std::vector<int32_t>(seq->token_ids.begin() + seq->num_prompt_tokens, seq->token_ids.end());
        scheduler.finish(s.seq_id);
      }
    }
  }
  EXPECT_FALSE(scheduler.has_unfinished());
  EXPECT_EQ(scheduler.block_manager().num_free_blocks(), config.num_blocks);
  for (int32_t b = 0; b < config.num_blocks; ++b) EXPECT_EQ(scheduler.block_manager().ref_count(b), 0) << b;
  result.num_preemptions = scheduler.num_preemptions();
  result.prefix_cache_hits = scheduler.prefix_cache_hits();
  result.prefix_cache_queries = scheduler.prefix_cache_queries();
  return result;
}

std::vector<SimRequest> random_workload(int num_requests, int max_prompt, int max_output, int arrival_spread,
                                        uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<SimRequest> requests;
  for (int i = 0; i < num_requests; ++i) {
    SimRequest r;
    r.seq_id = i + 1;
    const int prompt_len = 1 + static_cast<int>(rng() % max_prompt);
    for (int t = 0; t < prompt_len; ++t) r.prompt.push_back(static_cast<int32_t>(rng() % 1000));
    r.max_new_tokens = 1 + static_cast<int>(rng() % max_output);
    r.arrival_step = arrival_spread == 0 ? 0 : static_cast<int>(rng() % arrival_spread);
    requests.push_back(std::move(r));
  }
  std::stable_sort(requests.begin(), requests.end(),
                   [](const SimRequest& a, const SimRequest& b) { return a.arrival_step < b.arrival_step; });
  return requests;
}

void expect_expected_outputs(const std::vector<SimRequest>& requests, const SimResult& result) {
  ASSERT_EQ(result.outputs.size(), requests.size());
  for (const auto& r : requests) {
    const auto& out = result.outputs.at(r.seq_id);
    ASSERT_EQ(static_cast<int32_t>(out.size()), r.max_new_tokens);
    for (int32_t i = 0; i < r.max_new_tokens; ++i) EXPECT_EQ(out[i], fake_token(r.seq_id, i));
  }
}

TEST(Scheduler, AmpleMemoryRunsEverythingWithoutPreemption) {
  SchedulerConfig config{
      .max_num_seqs = 8, .max_num_batched_tokens = 64, .max_model_len = 256, .num_blocks = 512, .block_size = 16};
  auto requests = random_workload(40, 100, 30, 50, 1);
  SimResult result = simulate(config, requests);
  expect_expected_outputs(requests, result);
  EXPECT_EQ(result.num_preemptions, 0);
  EXPECT_EQ(result.max_batch_seqs, 8);
  EXPECT_TRUE(result.saw_mixed_prefill_and_decode);
}

TEST(Scheduler, AdmissionIsFirstComeFirstServed) {
  SchedulerConfig config{
      .max_num_seqs = 3, .max_num_batched_tokens = 32, .max_model_len = 128, .num_blocks = 40, .block_size = 4};
  auto requests = random_workload(30, 60, 20, 0, 2);
  SimResult result = simulate(config, requests);
  expect_expected_outputs(requests, result);
  std::vector<int64_t> arrival;
  for (const auto& r : requests) arrival.push_back(r.seq_id);
  EXPECT_EQ(result.admission_order, arrival);
}

TEST(Scheduler, TightMemoryPreemptsAndResumesWithIdenticalOutputs) {
  // 24 blocks of 4 tokens = 96 KV tokens for up to 8 sequences of up to 90 tokens.
  SchedulerConfig config{
      .max_num_seqs = 8, .max_num_batched_tokens = 48, .max_model_len = 96, .num_blocks = 24, .block_size = 4};
  auto requests = random_workload(30, 50, 40, 10, 3);
  SimResult result = simulate(config, requests);
  expect_expected_outputs(requests, result);
  EXPECT_GT(result.num_preemptions, 0) << "the workload was meant to force preemption";
}

TEST(Scheduler, RandomisedWorkloadsKeepEveryInvariant) {
  for (uint32_t seed = 10; seed < 30; ++seed) {
    std::mt19937 rng(seed);
    SchedulerConfig config;
    config.block_size = 1 + static_cast<int32_t>(rng() % 8);
    config.max_num_seqs = 1 + static_cast<int32_t>(rng() % 10);
    config.max_num_batched_tokens = 1 + static_cast<int32_t>(rng() % 64);
    config.max_model_len = 80;
    config.num_blocks = (80 + config.block_size - 1) / config.block_size + static_cast<int32_t>(rng() % 40);
    auto requests = random_workload(25, 40, 40, 30, seed);
    SCOPED_TRACE("seed " + std::to_string(seed));
    SimResult result = simulate(config, requests);
    expect_expected_outputs(requests, result);
  }
}

// Prompts made of one of `num_prefixes` shared prefixes (system prompts) and a random suffix.
std::vector<SimRequest> shared_prefix_workload(int num_requests, int num_prefixes, int prefix_len, int max_suffix,
                                               int max_output, int arrival_spread, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<std::vector<int32_t>> prefixes(num_prefixes);
  for (auto& p : prefixes)
    for (int t = 0; t < prefix_len; ++t) p.push_back(static_cast<int32_t>(rng() % 1000));
  std::vector<SimRequest> requests;
  for (int i = 0; i < num_requests; ++i) {
    SimRequest r;
    r.seq_id = i + 1;
    r.prompt = prefixes[rng() % num_prefixes];
    const int suffix = static_cast<int>(rng() % (max_suffix + 1));
    for (int t = 0; t < suffix; ++t) r.prompt.push_back(static_cast<int32_t>(rng() % 1000));
    r.max_new_tokens = 1 + static_cast<int>(rng() % max_output);
    r.arrival_step = static_cast<int>(rng() % arrival_spread);
    requests.push_back(std::move(r));
  }
  std::stable_sort(requests.begin(), requests.end(),
                   [](const SimRequest& a, const SimRequest& b) { return a.arrival_step < b.arrival_step; });
  return requests;
}

TEST(Scheduler, PrefixCachingReusesSharedPromptsWithTheSameOutputs) {
  SchedulerConfig config{
      .max_num_seqs = 8, .max_num_batched_tokens = 64, .max_model_len = 128, .num_blocks = 200, .block_size = 4};
  const auto requests = shared_prefix_workload(40, 3, 37, 20, 12, 60, 5);
  const SimResult plain = simulate(config, requests);
  expect_expected_outputs(requests, plain);
  EXPECT_EQ(plain.prefix_cache_hits, 0);
  config.enable_prefix_caching = true;
  const SimResult cached = simulate(config, requests);
  expect_expected_outputs(requests, cached);
  // A request admitted after the first of its prefix has computed it finds the prefix's 9
  // whole blocks (36 tokens); those arriving while it is still being computed do not.
  EXPECT_GE(cached.prefix_cache_hits, 30 * 36);
  EXPECT_LE(cached.prefix_cache_hits, cached.prefix_cache_queries);
  EXPECT_EQ(cached.prefill_tokens, plain.prefill_tokens - cached.prefix_cache_hits);
}

// cache_salt: one salt for every request shares exactly as no salt does; a salt per request
// shares nothing; two tenants share only within each (the simulation fails a read of KV that
// a request of another salt computed).
TEST(Scheduler, CacheSaltSharesCachedPrefixesOnlyWithinTheSameSalt) {
  SchedulerConfig config{.max_num_seqs = 8,
                         .max_num_batched_tokens = 64,
                         .max_model_len = 128,
                         .num_blocks = 200,
                         .block_size = 4,
                         .enable_prefix_caching = true};
  const auto plain = shared_prefix_workload(40, 3, 37, 20, 12, 60, 5);
  const SimResult unsalted = simulate(config, plain);
  ASSERT_GT(unsalted.prefix_cache_hits, 0);
  auto salted = [&plain](auto salt_of) {
    auto requests = plain;
    for (auto& r : requests) r.cache_salt = salt_of(r.seq_id);
    return requests;
  };
  const auto one_salt = salted([](int64_t) { return std::string("tenant"); });
  const SimResult shared = simulate(config, one_salt);
  expect_expected_outputs(one_salt, shared);
  EXPECT_EQ(shared.prefix_cache_hits, unsalted.prefix_cache_hits);
  const auto own_salts = salted([](int64_t id) { return "request-" + std::to_string(id); });
  const SimResult separate = simulate(config, own_salts);
  expect_expected_outputs(own_salts, separate);
  EXPECT_EQ(separate.prefix_cache_hits, 0);
  const auto two_tenants = salted([](int64_t id) { return id % 2 == 0 ? std::string("even") : std::string(); });
  const SimResult tenants = simulate(config, two_tenants);
  expect_expected_outputs(two_tenants, tenants);
  EXPECT_GT(tenants.prefix_cache_hits, 0);
  EXPECT_LT(tenants.prefix_cache_hits, unsalted.prefix_cache_hits);
}

TEST(Scheduler, PrefixCachingUnderPressureEvictsAndPreemptsWithoutLosingAnything) {
  for (uint32_t seed = 40; seed < 60; ++seed) {
    std::mt19937 rng(seed);
    SchedulerConfig config;
    config.enable_prefix_caching = true;
    config.block_size = 1 + static_cast<int32_t>(rng() % 8);
    config.max_num_seqs = 1 + static_cast<int32_t>(rng() % 10);
    config.max_num_batched_tokens = 1 + static_cast<int32_t>(rng() % 64);
    config.max_model_len = 80;
    config.num_blocks = (80 + config.block_size - 1) / config.block_size + static_cast<int32_t>(rng() % 30);
    const auto requests =
        shared_prefix_workload(30, 1 + static_cast<int>(rng() % 4), 1 + static_cast<int>(rng() % 40), 20, 20, 40, seed);
    SCOPED_TRACE("seed " + std::to_string(seed));
    const SimResult result = simulate(config, requests);
    expect_expected_outputs(requests, result);
  }
}

TEST(Scheduler, ChunkedPrefillSplitsALongPromptAcrossSteps) {
  SchedulerConfig config{
      .max_num_seqs = 4, .max_num_batched_tokens = 10, .max_model_len = 64, .num_blocks = 16, .block_size = 4};
  Scheduler scheduler(config);
  ASSERT_TRUE(scheduler.add(1, std::vector<int32_t>(3, 5), 8, {}).is_ok());
  ASSERT_TRUE(scheduler.add(2, std::vector<int32_t>(25, 6), 4, {}).is_ok());
  BatchPlan p1 = scheduler.schedule();
  ASSERT_EQ(p1.seqs.size(), 2u);
  EXPECT_EQ(p1.seqs[0].num_new_tokens(), 3);
  EXPECT_TRUE(p1.seqs[0].sample);
  EXPECT_EQ(p1.seqs[1].num_new_tokens(), 7);  // the rest of the budget
  EXPECT_FALSE(p1.seqs[1].sample);
  EXPECT_EQ(p1.num_batched_tokens, 10);
  EXPECT_EQ(p1.num_prefill_tokens, 10);
  scheduler.on_step_done(p1, {42, -1});
  BatchPlan p2 = scheduler.schedule();
  ASSERT_EQ(p2.seqs.size(), 2u);
  EXPECT_EQ(p2.seqs[0].token_ids, std::vector<int32_t>{42});  // decode of seq 1
  EXPECT_EQ(p2.seqs[0].num_computed_tokens, 3);
  EXPECT_EQ(p2.seqs[1].num_computed_tokens, 7);
  EXPECT_EQ(p2.seqs[1].num_new_tokens(), 9);
  EXPECT_EQ(p2.num_prefill_tokens, 9);
  scheduler.on_step_done(p2, {43, -1});
  BatchPlan p3 = scheduler.schedule();
  EXPECT_EQ(p3.seqs[1].num_new_tokens(), 9);
  EXPECT_TRUE(p3.seqs[1].sample);
  EXPECT_EQ(p3.seqs[1].output_token_idx, 0);
}

// Each scheduled sequence sees its own request's sampling parameters, the scheduler's one copy
// (the same object every step; a logit_bias list is never copied per step).
TEST(Scheduler, ScheduledSequencesViewTheirRequestsSamplingParams) {
  SchedulerConfig config{
      .max_num_seqs = 4, .max_num_batched_tokens = 32, .max_model_len = 64, .num_blocks = 16, .block_size = 4};
  Scheduler scheduler(config);
  RequestSamplingParams a, b;
  a.temperature = 0.5f;
  a.logit_bias = {{3, 1.5f}, {9, -2.0f}};
  b.seed = 77;
  ASSERT_TRUE(scheduler.add(1, std::vector<int32_t>(3, 5), 4, a).is_ok());
  ASSERT_TRUE(scheduler.add(2, std::vector<int32_t>(5, 6), 4, b).is_ok());
  BatchPlan p1 = scheduler.schedule();
  ASSERT_EQ(p1.seqs.size(), 2u);
  EXPECT_EQ(p1.seqs[0].sampling().temperature, 0.5f);
  ASSERT_EQ(p1.seqs[0].sampling().logit_bias.size(), 2u);
  EXPECT_EQ(p1.seqs[0].sampling().logit_bias[1].token_id, 9);
  EXPECT_EQ(p1.seqs[1].sampling().seed, 77u);
  const RequestSamplingParams* first = p1.seqs[0].sampling_params;
  scheduler.on_step_done(p1, {11, 12});
  BatchPlan p2 = scheduler.schedule();
  ASSERT_EQ(p2.seqs.size(), 2u);
  EXPECT_EQ(p2.seqs[0].sampling_params, first);
  EXPECT_NE(p2.seqs[1].sampling_params, first);
  EXPECT_EQ(&ScheduledSequence{}.sampling(), &kDefaultRequestSamplingParams);
}

TEST(Scheduler, PromptLogprobTargetsFollowEachPromptPosition) {
  SchedulerConfig config{
      .max_num_seqs = 4, .max_num_batched_tokens = 4, .max_model_len = 64, .num_blocks = 16, .block_size = 4};
  Scheduler scheduler(config);
  RequestSamplingParams wants;
  wants.num_prompt_logprobs = 2;
  ASSERT_TRUE(scheduler.add(1, {10, 11, 12, 13, 14, 15}, 3, wants).is_ok());
  BatchPlan p1 = scheduler.schedule();
  ASSERT_EQ(p1.seqs.size(), 1u);
  EXPECT_EQ(p1.seqs[0].prompt_logprob_targets, (std::vector<int32_t>{11, 12, 13, 14}));  // 4 positions
  scheduler.on_step_done(p1, {-1});
  BatchPlan p2 = scheduler.schedule();
  EXPECT_EQ(p2.seqs[0].prompt_logprob_targets, (std::vector<int32_t>{15}));  // the last prompt token has none
  scheduler.on_step_done(p2, {7});
  BatchPlan p3 = scheduler.schedule();  // a decode: nothing
  EXPECT_TRUE(p3.seqs[0].prompt_logprob_targets.empty());
  // A request without them gets none.
  ASSERT_TRUE(scheduler.add(2, {1, 2, 3}, 3, {}).is_ok());
  scheduler.on_step_done(p3, {8});
  BatchPlan p4 = scheduler.schedule();
  ASSERT_EQ(p4.seqs.size(), 2u);
  EXPECT_TRUE(p4.seqs[1].prompt_logprob_targets.empty());
}

TEST(Scheduler, PromptLogprobsSkipThePrefixCacheAndFitTheRowLimit) {
  SchedulerConfig config{.max_num_seqs = 4,
                         .max_num_batched_tokens = 64,
                         .max_model_len = 64,
                         .num_blocks = 32,
                         .block_size = 4,
                         .enable_prefix_caching = true,
                         .max_prompt_logprob_rows = 5};
  Scheduler scheduler(config);
  const std::vector<int32_t> prompt = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13};
  ASSERT_TRUE(scheduler.add(1, prompt, 1, {}).is_ok());
  BatchPlan p1 = scheduler.schedule();
  scheduler.on_step_done(p1, {50});  // its three full blocks are now cached
  scheduler.finish(1);
  ASSERT_TRUE(scheduler.add(2, prompt, 1, {}).is_ok());  // reads the cache
  BatchPlan p2 = scheduler.schedule();
  ASSERT_EQ(p2.seqs.size(), 1u);
  EXPECT_EQ(p2.seqs[0].num_computed_tokens, 12);
  scheduler.on_step_done(p2, {50});
  scheduler.finish(2);
  RequestSamplingParams wants;
  wants.num_prompt_logprobs = 0;
  ASSERT_TRUE(scheduler.add(3, prompt, 1, wants).is_ok());  // does not: every position is needed
  ASSERT_TRUE(scheduler.add(4, {7, 7, 7}, 1, wants).is_ok());
  BatchPlan p3 = scheduler.schedule();
  ASSERT_EQ(p3.seqs.size(), 1u);  // 5 rows: seq 3 takes them all, seq 4 waits (first come, first served)
  EXPECT_EQ(p3.seqs[0].num_computed_tokens, 0);
  EXPECT_EQ(p3.seqs[0].num_new_tokens(), 5);
  EXPECT_EQ(p3.seqs[0].prompt_logprob_targets.size(), 5u);
  scheduler.on_step_done(p3, {-1});
  BatchPlan p4 = scheduler.schedule();
  ASSERT_EQ(p4.seqs.size(), 1u);
  EXPECT_EQ(p4.seqs[0].num_new_tokens(), 5);
  scheduler.on_step_done(p4, {-1});
  BatchPlan p5 = scheduler.schedule();  // seq 3's last 3 tokens (2 rows) and seq 4's 3 tokens (2 rows)
  ASSERT_EQ(p5.seqs.size(), 2u);
  EXPECT_EQ(p5.seqs[0].num_new_tokens(), 3);
  EXPECT_TRUE(p5.seqs[0].sample);
  EXPECT_EQ(p5.seqs[0].prompt_logprob_targets.size(), 2u);
  EXPECT_EQ(p5.seqs[1].num_new_tokens(), 3);
  EXPECT_EQ(p5.seqs[1].prompt_logprob_targets.size(), 2u);
}

TEST(Scheduler, AbortFreesBlocksAtOnce) {
  SchedulerConfig config{
      .max_num_seqs = 4, .max_num_batched_tokens = 64, .max_model_len = 64, .num_blocks = 16, .block_size = 4};
  Scheduler scheduler(config);
  ASSERT_TRUE(scheduler.add(1, std::vector<int32_t>(20, 1), 8, {}).is_ok());
  ASSERT_TRUE(scheduler.add(2, std::vector<int32_t>(9, 1), 8, {}).is_ok());
  BatchPlan plan = scheduler.schedule();
  EXPECT_EQ(scheduler.block_manager().num_free_blocks(), 16 - 5 - 3);
  scheduler.finish(1);
  EXPECT_EQ(scheduler.block_manager().num_free_blocks(), 16 - 3);
  scheduler.on_step_done(plan, {7, 8});  // the aborted one's token is dropped
  EXPECT_EQ(scheduler.find(1), nullptr);
  EXPECT_EQ(scheduler.find(2)->num_output_tokens(), 1);
  scheduler.finish(2);
  scheduler.finish(99);  // unknown: ignored
  EXPECT_EQ(scheduler.block_manager().num_free_blocks(), 16);
  EXPECT_FALSE(scheduler.has_unfinished());
}

TEST(Scheduler, RejectsWhatCanNeverFit) {
  SchedulerConfig config{
      .max_num_seqs = 4, .max_num_batched_tokens = 64, .max_model_len = 32, .num_blocks = 4, .block_size = 4};
  Scheduler scheduler(config);
  EXPECT_EQ(scheduler.add(1, {}, 4, {}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(scheduler.add(2, std::vector<int32_t>(30, 1), 3, {}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(scheduler.add(3, std::vector<int32_t>(10, 1), 7, {}).code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(scheduler.add(4, std::vector<int32_t>(10, 1), 0, {}).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(scheduler.add(5, std::vector<int32_t>(10, 1), 6, {}).is_ok());
  EXPECT_EQ(scheduler.add(5, std::vector<int32_t>(10, 1), 6, {}).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace crosspoint
