// sample_rows (kernels/cuda/sampling.h) against its host reference
// (kernels/cuda/sampling_reference.h, itself tested against the host sampler in
// tests/kernels/test_gpu_sampling_reference.cc): the same token for the same u on random rows
// of awkward widths (1, 7, 1000, 32000) and Qwen's 152064, many rows in one launch, padded row
// strides (odd ones for the scalar kernel, multiples of 8 for the vector one), rows not named
// left untouched.
//
// Both sides compare the same integers (fixed-point weights), so they agree exactly unless
// CUDA's exp and the host's differ in the last bit where that moves a weight's rounding; a
// mismatch is accepted only when u lies within 1e-5 (relative) of a cumulative boundary (the
// reference draws a different token at u * (1 +- 1e-5)), and the count is printed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "common/dtype.h"
#include "kernels/cuda/sampling.h"
#include "kernels_cuda/reference.h"

namespace crosspoint::cuda {
namespace {

using testing::DeviceBuffer;

constexpr int32_t kUntouched = -7;

TEST(SampleRowsArgs, BadArgumentsAreStatusErrors) {
  const uint16_t* logits = reinterpret_cast<const uint16_t*>(16);
  const SampledRowParams* params = reinterpret_cast<const SampledRowParams*>(16);
  int32_t* out = reinterpret_cast<int32_t*>(16);
  EXPECT_TRUE(sample_rows(nullptr, 0, 0, nullptr, 0, nullptr, 10, nullptr).is_ok());  // nothing to do
  EXPECT_EQ(sample_rows(logits, 10, 1, params, -1, out, 10, nullptr).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(sample_rows(logits, 9, 1, params, 1, out, 10, nullptr).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(sample_rows(logits, 10, 1, params, 1, out, 0, nullptr).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(sample_rows(logits, 1 << 21, 1, params, 1, out, 1 << 20, nullptr).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(sample_rows(nullptr, 10, 1, params, 1, out, 10, nullptr).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(sample_rows(logits, 10, 1, params, 1, nullptr, 10, nullptr).code(), StatusCode::kInvalidArgument);
}

// Logits rows of one kind: smooth random, coarse (many ties), or peaked.
std::vector<uint16_t> make_logits(std::mt19937& gen, int rows, int vocab, int64_t stride, int kind) {
  std::vector<uint16_t> bits(static_cast<size_t>(rows) * stride, f32_to_f16(-1000.0f));  // padding columns
  std::normal_distribution<float> normal(0.0f, kind == 2 ? 6.0f : 2.5f);
  for (int r = 0; r < rows; ++r)
    for (int i = 0; i < vocab; ++i) {
      float x = normal(gen);
      if (kind == 1) x = std::round(x * 2.0f) / 2.0f;  // ties everywhere
      bits[static_cast<size_t>(r) * stride + i] = f32_to_f16(x);
    }
  return bits;
}

SampledRowParams random_params(std::mt19937& gen, int vocab, int32_t row) {
  const float temperatures[] = {0.0f, 0.3f, 0.7f, 1.0f, 1.0f, 1.5f};
  const float top_ps[] = {1.0f, 1.0f, 0.95f, 0.9f, 0.5f, 0.1f, 1e-6f};
  const int32_t top_ks[] = {0, 0, 1, 5, 50, 1000, vocab, vocab + 1};
  SampledRowParams p;
  p.logits_row = row;
  p.temperature = temperatures[gen() % 6];
  p.top_p = top_ps[gen() % 7];
  p.top_k = top_ks[gen() % 8];
  p.uniform = static_cast<float>(gen() >> 8) / 16777216.0f;
  return p;
}

struct Comparison {
  int rows = 0;
  int mismatches_at_boundary = 0;
  int mismatches = 0;  // not explained by a boundary
};

// Launches once for `params` and compares every named row's token with the reference's.
Comparison run_and_compare(const std::vector<uint16_t>& logits, int num_logits_rows, int vocab, int64_t stride,
                           const std::vector<SampledRowParams>& params) {
  DeviceBuffer<uint16_t> d_logits(logits);
  DeviceBuffer<SampledRowParams> d_params(params);
  DeviceBuffer<int32_t> d_out(std::vector<int32_t>(num_logits_rows, kUntouched));
  Status status = sample_rows(d_logits.get(), stride, num_logits_rows, d_params.get(), static_cast<int>(params.size()),
                              d_out.get(), vocab, nullptr);
  EXPECT_TRUE(status.is_ok()) << status.to_string();
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<int32_t> out = d_out.download();
  std::vector<bool> named(num_logits_rows, false);
  Comparison c;
  for (const SampledRowParams& p : params) {
    if (p.logits_row < 0 || p.logits_row >= num_logits_rows) continue;
    named[p.logits_row] = true;
    const uint16_t* row = logits.data() + static_cast<size_t>(p.logits_row) * stride;
    const int32_t expected = gpu_sample_row_reference(row, vocab, p);
    ++c.rows;
    if (out[p.logits_row] == expected) continue;
    SampledRowParams below = p, above = p;
    below.uniform = p.uniform * (1.0f - 1e-5f);
    above.uniform = std::min(p.uniform * (1.0f + 1e-5f), 1.0f - 1.0f / 16777216.0f);
    if (gpu_sample_row_reference(row, vocab, below) != gpu_sample_row_reference(row, vocab, above)) {
      ++c.mismatches_at_boundary;
    } else {
      ++c.mismatches;
      ADD_FAILURE() << "row " << p.logits_row << " vocab " << vocab << " T " << p.temperature << " k " << p.top_k
                    << " p " << p.top_p << " u " << p.uniform << ": kernel " << out[p.logits_row] << ", reference "
                    << expected;
    }
  }
  for (int r = 0; r < num_logits_rows; ++r) {
    if (named[r]) continue;
    EXPECT_EQ(out[r], kUntouched) << "row " << r << " was not named but was written";
  }
  return c;
}

TEST(SampleRowsTest, MatchesTheReferenceOnAwkwardWidths) {
  CROSSPOINT_SKIP_WITHOUT_GPU();
  std::mt19937 gen(77);
  Comparison total;
  for (int vocab : {1, 7, 1000, 32000, 152064}) {
    const int rows = vocab >= 152064 ? 12 : 40;
    for (int kind = 0; kind < 3; ++kind) {
      // Padded rows: an odd stride takes the scalar kernel, a multiple of 8 the 16-byte loads.
      const int64_t stride = kind == 1 ? vocab + 3 : (vocab + 8) / 8 * 8;
      const std::vector<uint16_t> logits = make_logits(gen, rows, vocab, stride, kind);
      std::vector<SampledRowParams> params;
      // Every other row, in reverse order, so rows and parameters are not index-aligned.
      for (int r = rows - 1; r >= 0; r -= 2) params.push_back(random_params(gen, vocab, r));
      params.push_back(random_params(gen, vocab, rows + 5));  // out of range: skipped
      const Comparison c = run_and_compare(logits, rows, vocab, stride, params);
      total.rows += c.rows;
      total.mismatches += c.mismatches;
      total.mismatches_at_boundary += c.mismatches_at_boundary;
    }
  }
  std::printf("sample_rows vs reference: %d rows, %d mismatches with u within 1e-5 of a boundary, %d others\n",
              total.rows, total.mismatches_at_boundary, total.mismatches);
  EXPECT_EQ(total.mismatches, 0);
  EXPECT_LE(total.mismatches_at_boundary, std::max(1, total.rows / 100));
}

TEST(SampleRowsTest, ManyRowsInOneLaunchAndTheSameTokensTwice) {
  CROSSPOINT_SKIP_WITHOUT_GPU();
  std::mt19937 gen(5);
  const int rows = 256, vocab = 32000;
  const std::vector<uint16_t> logits = make_logits(gen, rows, vocab, vocab, 0);
  std::vector<SampledRowParams> params;
  for (int r = 0; r < rows; ++r) params.push_back(random_params(gen, vocab, r));
  const Comparison c = run_and_compare(logits, rows, vocab, vocab, params);
  EXPECT_EQ(c.rows, rows);
  EXPECT_EQ(c.mismatches, 0);
  // Determinism: a second launch gives the same tokens.
  DeviceBuffer<uint16_t> d_logits(logits);
  DeviceBuffer<SampledRowParams> d_params(params);
  DeviceBuffer<int32_t> first(rows), second(rows);
  ASSERT_TRUE(sample_rows(d_logits.get(), vocab, rows, d_params.get(), rows, first.get(), vocab, nullptr).is_ok());
  ASSERT_TRUE(sample_rows(d_logits.get(), vocab, rows, d_params.get(), rows, second.get(), vocab, nullptr).is_ok());
  EXPECT_EQ(first.download(), second.download());
}

TEST(SampleRowsTest, AdversarialRows) {
  CROSSPOINT_SKIP_WITHOUT_GPU();
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const int vocab = 1000;
  std::vector<std::vector<float>> rows = {
      std::vector<float>(vocab, nan),     // all NaN -> 0
      std::vector<float>(vocab, -inf),    // uniform over all ids
      std::vector<float>(vocab, 0.125f),  // all equal
  };
  std::vector<float> spiky(vocab, -inf);
  spiky[3] = inf;
  spiky[500] = inf;
  spiky[999] = 1.0f;
  spiky[7] = nan;
  rows.push_back(spiky);
  std::vector<float> ties(vocab);
  for (int i = 0; i < vocab; ++i) ties[i] = (i % 5 == 0) ? 2.0f : (i % 3 == 0 ? nan : -1.0f);
  rows.push_back(ties);
  std::vector<uint16_t> logits;
  for (const auto& row : rows)
    for (float x : row) logits.push_back(f32_to_f16(x));
  std::vector<SampledRowParams> params;
  std::mt19937 gen(3);
  for (int r = 0; r < static_cast<int>(rows.size()); ++r)
    for (const auto& [t, k, top_p] : std::vector<std::tuple<float, int32_t, float>>{{1.0f, 0, 1.0f},
                                                                                    {1e-6f, 0, 1.0f},
                                                                                    {1e30f, 0, 0.5f},
                                                                                    {1.0f, 3, 1.0f},
                                                                                    {0.0f, 0, 1.0f},
                                                                                    {1.0f, 2000, 1e-30f},
                                                                                    {2.0f, 100, 0.3005f}}) {
      SampledRowParams p;
      p.logits_row = r;
      p.temperature = t;
      p.top_k = k;
      p.top_p = top_p;
      p.uniform = static_cast<float>(gen() >> 8) / 16777216.0f;
      // One launch per setting: each launch writes every row once.
      const Comparison c = run_and_compare(logits, static_cast<int>(rows.size()), vocab, vocab, {p});
      EXPECT_EQ(c.mismatches, 0) << "row " << r;
    }
  params.clear();
}

// Not a benchmark, a sanity figure for the runner: one step's worth of sampled rows.
TEST(SampleRowsTest, PrintsTheTimeOfA128RowStep) {
  CROSSPOINT_SKIP_WITHOUT_GPU();
  std::mt19937 gen(11);
  const int rows = 128, vocab = 152064;
  const std::vector<uint16_t> logits = make_logits(gen, rows, vocab, vocab, 0);
  DeviceBuffer<uint16_t> d_logits(logits);
  DeviceBuffer<int32_t> d_out(rows);
  for (const auto& [t, k, top_p] : std::vector<std::tuple<float, int32_t, float>>{
           {1.0f, 0, 1.0f}, {0.7f, 50, 1.0f}, {0.7f, 0, 0.9f}, {0.7f, 50, 0.9f}}) {
    std::vector<SampledRowParams> params;
    for (int r = 0; r < rows; ++r) {
      SampledRowParams p;
      p.logits_row = r;
      p.temperature = t;
      p.top_k = k;
      p.top_p = top_p;
      p.uniform = static_cast<float>(gen() >> 8) / 16777216.0f;
      params.push_back(p);
    }
    DeviceBuffer<SampledRowParams> d_params(params);
    cudaEvent_t start, stop;
    cudaEventCreate(&start);
    cudaEventCreate(&stop);
    ASSERT_TRUE(sample_rows(d_logits.get(), vocab, rows, d_params.get(), rows, d_out.get(), vocab, nullptr).is_ok());
    cudaEventRecord(start);
    const int reps = 10;
    for (int i = 0; i < reps; ++i)
      ASSERT_TRUE(sample_rows(d_logits.get(), vocab, rows, d_params.get(), rows, d_out.get(), vocab, nullptr).is_ok());
    cudaEventRecord(stop);
    ASSERT_EQ(cudaEventSynchronize(stop), cudaSuccess);
    float ms = 0;
    cudaEventElapsedTime(&ms, start, stop);
    std::printf("sample_rows: %d rows x %d vocab, T %.1f top_k %d top_p %.2f: %.1f us per launch\n", rows, vocab, t, k,
                top_p, 1000.0f * ms / reps);
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
  }
}

}  // namespace
}  // namespace crosspoint::cuda
