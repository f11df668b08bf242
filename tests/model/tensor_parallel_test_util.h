// Helpers for the tensor-parallel tests: the logits of a fixed run of steps (a prefill of two
// sequences, then decode steps) through the whole model and through its split.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "model/tensor_parallel_model.h"
#include "model_test_util.h"

namespace crosspoint::testing {

// Logits of a prefill of two sequences and three decode steps, every position's.
inline std::vector<float> run_steps(const std::function<Status(const ForwardBatch&, CpuKvCache&, float*)>& forward,
                                    const KvCacheShape& cache_shape, int32_t vocab) {
  CpuKvCache cache(cache_shape);
  BatchBuilder builder(2, 16, 4);
  std::vector<float> all;
  const std::vector<std::vector<testing::SeqChunk>> steps = {
      {{0, {5, 17, 2, 9, 30, 11, 4}}, {1, {8, 3, 3, 21, 6}}}, {{0, {12}}, {1, {7}}}, {{0, {1}}, {1, {2}}}, {{1, {19}}}};
  for (const auto& chunks : steps) {
    const ForwardBatch batch = builder.build(chunks, /*all_logits=*/true);
    std::vector<float> logits(batch.logits_token_idx.size() * vocab);
    const Status s = forward(batch, cache, logits.data());
    EXPECT_TRUE(s.is_ok()) << s.to_string();
    all.insert(all.end(), logits.begin(), logits.end());
  }
  return all;
}

inline std::vector<float> whole_model_logits(const Model& m) {
  return run_steps([&](const ForwardBatch& b, CpuKvCache& c, float* l) { return m.forward(b, c, l); },
                   m.kv_cache_shape(64, 4, DType::kF32), m.vocab_size());
}

inline std::vector<float> split_model_logits(const TensorParallelModel& tp) {
  return run_steps([&](const ForwardBatch& b, CpuKvCache& c, float* l) { return tp.forward(b, c, l); },
                   tp.kv_cache_shape(64, 4, DType::kF32), tp.model().vocab_size());
}

// The largest |whole - split| over the largest |whole|.
inline float relative_difference(const std::vector<float>& whole, const std::vector<float>& split) {
  float largest = 0, worst = 0;
  for (size_t i = 0; i < whole.size() && i < split.size(); ++i) {
    largest = std::max(largest, std::fabs(whole[i]));
    worst = std::max(worst, std::fabs(whole[i] - split[i]));
  }
  return worst / (1 + largest);
}

// |a - b| <= tolerance * (1 + the largest |a|): the split sums each row-parallel output in two
// to four parts and adds them, so they differ from the whole model by fp32 rounding alone.
inline void expect_close(const std::vector<float>& whole, const std::vector<float>& split, float tolerance,
                         const std::string& what) {
  ASSERT_EQ(whole.size(), split.size());
  EXPECT_LE(relative_difference(whole, split), tolerance) << what;
}

}  // namespace crosspoint::testing
