// Shared by the W4A16 tests: a random GPTQ int4 linear in checkpoint layout and its
// dequantise-then-matmul reference (double accumulation, the GPTQ formula of
// checkpoint-formats.md: w = s[g_idx[k], n] * (q[k, n] - z), z = 8 or, for asymmetric weights,
// a zero point per (group, column)).
#pragma once

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "common/dtype.h"
#include "kernels_cuda/reference.h"

namespace crosspoint::cuda::testing {

// A random GPTQ int4 linear in checkpoint layout, with the values the reference needs.
struct GptqLinear {
  int k = 0, n = 0, group_size = 0, num_groups = 0;
  std::vector<uint8_t> q;        // [K, N] nibbles 0..15
  std::vector<int32_t> qweight;  // [K/8, N]
  std::vector<uint16_t> scales;  // [num_groups, N] fp16
  std::vector<int32_t> g_idx;    // [K]
  std::vector<uint8_t> zeros;    // [num_groups, N] 0..16, or empty: every zero point 8

  int zero(int group, int col) const { return zeros.empty() ? 8 : zeros[static_cast<size_t>(group) * n + col]; }
  double weight(int row, int col) const {  // dequantised W[row][col]
    return crosspoint::f16_to_f32(scales[static_cast<size_t>(g_idx[row]) * n + col]) *
           (static_cast<int>(q[static_cast<size_t>(row) * n + col]) - zero(g_idx[row], col));
  }
};

// group_size -1: one group over all of K. act_order shuffles g_idx (each group keeps G rows).
// asymmetric: random zero points 0..16 per (group, column).
inline GptqLinear make_gptq(std::mt19937& rng, int k, int n, int group_size, bool act_order, bool asymmetric = false) {
  GptqLinear lin;
  lin.k = k;
  lin.n = n;
  lin.group_size = group_size == -1 ? k : group_size;
  lin.num_groups = (k + lin.group_size - 1) / lin.group_size;
  std::uniform_int_distribution<int> nibble(0, 15);
  lin.q.resize(static_cast<size_t>(k) * n);
  for (auto& v : lin.q) v = static_cast<uint8_t>(nibble(rng));
  lin.qweight.assign(static_cast<size_t>(k / 8) * n, 0);
  for (int row = 0; row < k; ++row) {
    for (int col = 0; col < n; ++col) {
      auto& word = lin.qweight[static_cast<size_t>(row / 8) * n + col];
      word = static_cast<int32_t>(static_cast<uint32_t>(word) |
                                  static_cast<uint32_t>(lin.q[static_cast<size_t>(row) * n + col]) << (4 * (row % 8)));
    }
  }
  lin.scales = random_f16(rng, static_cast<size_t>(lin.num_groups) * n, 0.002f, 0.03f);
  lin.g_idx.resize(k);
  for (int row = 0; row < k; ++row) lin.g_idx[row] = row / lin.group_size;
  if (act_order) std::shuffle(lin.g_idx.begin(), lin.g_idx.end(), rng);
  if (asymmetric) {
    std::uniform_int_distribution<int> zero(0, 16);
    lin.zeros.resize(static_cast<size_t>(lin.num_groups) * n);
    for (auto& z : lin.zeros) z = static_cast<uint8_t>(zero(rng));
  }
  return lin;
}

// y[m, n] = sum_k x[m, k] * W[k, n] in double; x [M, K] fp16 with row stride x_stride.
// Dequantises W once (transposed, [N, K] double rows) so large shapes stay quick.
inline std::vector<double> w4a16_reference(const GptqLinear& lin, const std::vector<uint16_t>& x, int m,
                                           int64_t x_stride) {
  std::vector<double> x_row(lin.k), w_row(lin.k);
  std::vector<double> y(static_cast<size_t>(m) * lin.n, 0.0);
  std::vector<double> xs(static_cast<size_t>(m) * lin.k);
  for (int i = 0; i < m; ++i)
    for (int kk = 0; kk < lin.k; ++kk)
      xs[static_cast<size_t>(i) * lin.k + kk] = crosspoint::f16_to_f32(x[i * x_stride + kk]);
  for (int col = 0; col < lin.n; ++col) {
    for (int kk = 0; kk < lin.k; ++kk) w_row[kk] = lin.weight(kk, col);
    for (int i = 0; i < m; ++i) {
      const double* xr = xs.data() + static_cast<size_t>(i) * lin.k;
      double s = 0.0;
      for (int kk = 0; kk < lin.k; ++kk) s += xr[kk] * w_row[kk];
      y[static_cast<size_t>(i) * lin.n + col] = s;
    }
  }
  return y;
}

}  // namespace crosspoint::cuda::testing
