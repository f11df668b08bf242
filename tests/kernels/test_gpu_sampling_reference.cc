// The GPU sampler's host reference (kernels/cuda/sampling_reference.h) against the host
// sampler (kernels/sampling.h), on the CPU: the kept set must be the host sampler's, on random
// and adversarial rows, and the draws must follow the host sampler's distribution. The GPU
// kernel itself is checked against this reference in tests/kernels_cuda/test_sampling.cc.
//
// The host sampler does not expose its kept set, so it is read from its draws: it walks the
// order "larger logit, lower id" and, for u just below 1, returns the last kept token whose
// probability it can reach with 24-bit uniforms. The reference's kept set must be exactly that
// prefix of the order, plus at most a tail the host cannot reach (mass < 2^-23 of the kept).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <random>
#include <vector>

#include "common/dtype.h"
#include "kernels/cuda/sampling_reference.h"
#include "kernels/sampling.h"

namespace crosspoint::cuda {
namespace {

constexpr float kLastUniform = 1.0f - 1.0f / 16777216.0f;  // the largest next_uniform()

struct Row {
  std::vector<uint16_t> bits;  // [vocab] fp16, what the kernel reads
  std::vector<float> values;   // [vocab] the same logits as f32, what the host sampler reads
};

Row make_row(const std::vector<float>& logits) {
  Row r;
  for (float x : logits) {
    r.bits.push_back(f32_to_f16(x));
    r.values.push_back(f16_to_f32(r.bits.back()));
  }
  return r;
}

SampledRowParams gpu_params(float temperature, int32_t top_k, float top_p, float u = 0.5f) {
  SampledRowParams p;
  p.temperature = temperature;
  p.top_k = top_k;
  p.top_p = top_p;
  p.uniform = u;
  return p;
}

// The host sampler's order: larger logit first, lower id on ties (NaN-free rows only).
std::vector<int32_t> host_order(const std::vector<float>& values) {
  std::vector<int32_t> order(values.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return values[a] > values[b]; });
  return order;
}

// Checks the reference's kept set against the host sampler's, as described at the top.
void expect_same_kept_set(const Row& row, const SampledRowParams& p, const std::string& what) {
  const int32_t vocab = static_cast<int32_t>(row.bits.size());
  const std::vector<int32_t> kept = gpu_sampling_kept_ids_reference(row.bits.data(), vocab, p);
  const std::vector<int32_t> order = host_order(row.values);
  SamplingParams host;
  host.temperature = p.temperature;
  host.top_k = p.top_k;
  host.top_p = p.top_p;
  const int32_t host_last = sample_token(row.values.data(), vocab, host, kLastUniform);
  const int64_t host_size = std::find(order.begin(), order.end(), host_last) - order.begin() + 1;
  const int64_t kept_size = static_cast<int64_t>(kept.size());
  ASSERT_GE(kept_size, host_size) << what;
  // The kept ids are the first kept_size of the order.
  std::vector<int32_t> prefix(order.begin(), order.begin() + kept_size);
  std::sort(prefix.begin(), prefix.end());
  ASSERT_EQ(kept, prefix) << what;
  // Anything beyond the host's reach weighs < 2^-23 of the kept mass.
  const SamplingCut cut = gpu_sampling_cut_reference(row.bits.data(), vocab, p);
  double kept_weight = 0, tail_weight = 0;
  for (int64_t rank = 0; rank < kept_size; ++rank) {
    const double w = static_cast<double>(
        sampling_weight(row.values[order[rank]], cut.max_logit, sampling_effective_params(p).temperature));
    kept_weight += w;
    if (rank >= host_size) tail_weight += w;
  }
  EXPECT_LE(tail_weight, kept_weight / 8388608.0) << what << ": kept " << kept_size << ", host " << host_size;
}

TEST(GpuSamplingReferenceTest, KeptSetEqualsTheHostSamplersOnRandomRows) {
  std::mt19937 gen(2024);
  const std::vector<float> temperatures = {0.3f, 0.7f, 1.0f, 1.6f};
  const std::vector<float> top_ps = {1.0f, 0.95f, 0.9f, 0.5f, 0.05f, 1e-6f};
  for (int32_t vocab : {1, 2, 7, 300, 5003, 32000}) {
    for (float scale : {1.0f, 4.0f}) {
      std::normal_distribution<float> normal(0.0f, scale);
      std::vector<float> logits(vocab);
      for (float& x : logits) x = normal(gen);
      const Row row = make_row(logits);
      for (float t : temperatures)
        for (int32_t k : {0, 1, 5, 50, vocab, vocab + 3})
          for (float top_p : top_ps) {
            // Large rows: fewer settings, to keep the test fast under the sanitizers.
            if (vocab >= 5003 && (k == 5 || k == 1 || k == vocab || t == 0.7f || t == 1.6f)) continue;
            expect_same_kept_set(row, gpu_params(t, k, top_p),
                                 "vocab " + std::to_string(vocab) + " scale " + std::to_string(scale) + " T " +
                                     std::to_string(t) + " k " + std::to_string(k) + " p " + std::to_string(top_p));
          }
    }
  }
}

TEST(GpuSamplingReferenceTest, KeptSetEqualsTheHostSamplersOnAdversarialRows) {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<std::pair<std::string, std::vector<float>>> rows = {
      {"all equal", std::vector<float>(1000, 0.25f)},        {"ties at the cut", {1, 3, 3, 3, 2, 3, 0, 3}},
      {"-inf tail", {2, -inf, 1, -inf, 0.5f, -inf, -inf}},   {"signed zeros", {-0.0f, 0.0f, -0.0f, -1.0f}},
      {"huge spread", {-60000, 60000, 0, 59000, -1, 60000}}, {"two levels", {}},
  };
  for (int i = 0; i < 999; ++i) rows.back().second.push_back(i % 3 == 0 ? 1.0f : -1.0f);
  const std::vector<float> temperatures = {1e-6f, 0.5f, 1.0f, 1e4f, 1e30f};
  for (const auto& [name, logits] : rows) {
    const Row row = make_row(logits);
    const int32_t vocab = static_cast<int32_t>(logits.size());
    for (float t : temperatures)
      for (int32_t k : {0, 1, 2, 3, 10, vocab, vocab + 1000})
        for (float top_p : {1.0f, 0.999f, 0.3005f, 0.5001f, 1e-30f})
          expect_same_kept_set(
              row, gpu_params(t, k, top_p),
              name + " T " + std::to_string(t) + " k " + std::to_string(k) + " p " + std::to_string(top_p));
  }
}

TEST(GpuSamplingReferenceTest, TiesAtTheTopKCutKeepTheLowestIds) {
  const Row row = make_row({1, 3, 3, 3, 2, 3});
  EXPECT_EQ(gpu_sampling_kept_ids_reference(row.bits.data(), 6, gpu_params(1, 2, 1)), (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(gpu_sampling_kept_ids_reference(row.bits.data(), 6, gpu_params(1, 5, 1)),
            (std::vector<int32_t>{1, 2, 3, 4, 5}));
  // All equal: top_p 0.5 of 1000 keeps exactly the 500 lowest ids (exact integer sums).
  const Row flat = make_row(std::vector<float>(1000, -2.0f));
  const auto kept = gpu_sampling_kept_ids_reference(flat.bits.data(), 1000, gpu_params(1, 0, 0.5f));
  ASSERT_EQ(kept.size(), 500u);
  EXPECT_EQ(kept.back(), 499);
}

TEST(GpuSamplingReferenceTest, RowsTheHostLeavesUndefinedAreDefined) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Row all_nan = make_row({nan, nan, nan});
  EXPECT_EQ(gpu_sample_row_reference(all_nan.bits.data(), 3, gpu_params(1, 0, 1, 0.7f)), 0);
  // NaN never drawn, whatever u.
  const Row some_nan = make_row({nan, 1.0f, nan, 1.0f});
  for (float u : {0.0f, 0.3f, 0.6f, kLastUniform}) {
    const int32_t token = gpu_sample_row_reference(some_nan.bits.data(), 4, gpu_params(1, 0, 0.9f, u));
    EXPECT_TRUE(token == 1 || token == 3) << u;
  }
  // All -inf: uniform over the ids (u in quarters of 4 ids).
  const Row all_neg_inf = make_row({-inf, -inf, -inf, -inf});
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(gpu_sample_row_reference(all_neg_inf.bits.data(), 4, gpu_params(1, 0, 1, 0.25f * i + 0.1f)), i);
  // +inf logits share the mass; finite ones get none.
  const Row pos_inf = make_row({5, inf, 7, inf});
  EXPECT_EQ(gpu_sample_row_reference(pos_inf.bits.data(), 4, gpu_params(1, 0, 1, 0.2f)), 1);
  EXPECT_EQ(gpu_sample_row_reference(pos_inf.bits.data(), 4, gpu_params(1, 0, 1, 0.7f)), 3);
  // temperature <= 0 acts as greedy (lowest id among the max).
  const Row row = make_row({1, 4, 2, 4});
  for (float u : {0.0f, 0.9f}) EXPECT_EQ(gpu_sample_row_reference(row.bits.data(), 4, gpu_params(0, 0, 1, u)), 1);
}

// Inverse-CDF draws on an evenly spaced grid of u: each token's share of the grid is its
// probability to within one grid step, for both samplers, whatever order they walk in.
TEST(GpuSamplingReferenceTest, GridDrawsMatchTheHostSamplersDistribution) {
  const Row row = make_row({0.1f, 2.0f, -1.0f, 1.5f, 1.5f, 0.7f, -3.0f, 2.2f, 0.0f, 1.1f, -0.4f, 0.9f});
  const int32_t vocab = 12;
  const int n = 1 << 13;
  for (const auto& [t, k, top_p] : std::vector<std::tuple<float, int32_t, float>>{
           {1.0f, 0, 1.0f}, {0.8f, 8, 0.9f}, {1.3f, 5, 1.0f}, {0.5f, 0, 0.7f}, {2.0f, 3, 0.99f}}) {
    std::map<int32_t, int> gpu_counts, host_counts;
    SamplingParams host;
    host.temperature = t;
    host.top_k = k;
    host.top_p = top_p;
    for (int i = 0; i < n; ++i) {
      const float u = (static_cast<float>(i) + 0.5f) / n;
      ++gpu_counts[gpu_sample_row_reference(row.bits.data(), vocab, gpu_params(t, k, top_p, u))];
      ++host_counts[sample_token(row.values.data(), vocab, host, u)];
    }
    for (int32_t id = 0; id < vocab; ++id)
      EXPECT_LE(std::abs(gpu_counts[id] - host_counts[id]), 2)
          << "id " << id << " T " << t << " k " << k << " p " << top_p;
  }
}

// Random u from the request generator: a chi-square test of the reference's draws against the
// probabilities of the filtered softmax computed here in double (df = kept - 1, 0.1 % level).
TEST(GpuSamplingReferenceTest, RandomDrawsPassAChiSquareTest) {
  const std::vector<float> logits = {0.3f, 1.2f, -0.5f, 2.0f, 1.9f, 0.0f, -2.0f, 1.0f};
  const Row row = make_row(logits);
  const SampledRowParams base = gpu_params(0.9f, 6, 0.95f);
  const std::vector<int32_t> kept = gpu_sampling_kept_ids_reference(row.bits.data(), 8, base);
  double max_logit = -1e30, total = 0;
  for (int32_t id : kept) max_logit = std::max<double>(max_logit, row.values[id]);
  std::map<int32_t, double> prob;
  for (int32_t id : kept) total += prob[id] = std::exp((row.values[id] - max_logit) / 0.9);
  for (auto& [id, p] : prob) p /= total;
  SamplingRng rng(99);
  const int n = 50000;
  std::map<int32_t, int> counts;
  for (int i = 0; i < n; ++i) {
    SampledRowParams p = base;
    p.uniform = rng.next_uniform();
    ++counts[gpu_sample_row_reference(row.bits.data(), 8, p)];
  }
  double chi_square = 0;
  for (const auto& [id, c] : counts) {
    ASSERT_TRUE(prob.count(id)) << "drew " << id << ", which is not kept";
    const double expected = n * prob[id];
    chi_square += (c - expected) * (c - expected) / expected;
  }
  // Chi-square 0.999 quantiles for df 1..7.
  const double limits[] = {10.83, 13.82, 16.27, 18.47, 20.52, 22.46, 24.32};
  ASSERT_GE(kept.size(), 2u);
  EXPECT_LT(chi_square, limits[kept.size() - 2]) << "kept " << kept.size();
}

TEST(GpuSamplingReferenceTest, FixedPointHelpers) {
  EXPECT_EQ(sampling_weight(3.0f, 3.0f, 1.0f), uint64_t{1} << 44);
  EXPECT_EQ(sampling_weight(-100.0f, 3.0f, 1.0f), 0u);
  EXPECT_EQ(sampling_draw_target(1000, 0.0f), 0u);
  EXPECT_EQ(sampling_draw_target(1000, kLastUniform), 999u);
  EXPECT_EQ(sampling_top_p_target(1000, 1e-30f), 1u);
  EXPECT_EQ(sampling_top_p_target(1000, 0.5f), 500u);
  EXPECT_EQ(sampling_top_p_target(1000, 0.5001f), 501u);
  uint32_t a, b;
  ASSERT_TRUE(sampling_order_key(0x8000, &a));  // -0
  ASSERT_TRUE(sampling_order_key(0x0000, &b));  // +0
  EXPECT_EQ(a, b);
  EXPECT_FALSE(sampling_order_key(0x7E00, &a));  // NaN
  ASSERT_TRUE(sampling_order_key(0xFC00, &a));   // -inf
  ASSERT_TRUE(sampling_order_key(0xBC00, &b));   // -1
  EXPECT_LT(a, b);
  EXPECT_EQ(sampling_key_bits(b), 0xBC00);
}

}  // namespace
}  // namespace crosspoint::cuda
