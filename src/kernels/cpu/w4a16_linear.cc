// Fast W4A16 linear on the GPTQ word layout (qweight [K/8, N] int32). Work items are tiles of
// 16 output columns: one 64-byte cache line of each qweight row. For up to 4 rows of x at a
// time, each group accumulates sum_k x_k q_k per column in registers (nibble -> f32 -> FMA);
// at the group's end the scale and zero point are applied once:
//   y += s * (sum_k x_k q_k - z * sum_k x_k)
// sum_k x_k per (row, group) is computed once up front. Columns past the last multiple of 8
// take a scalar path with the same order of operations.
#include <algorithm>
#include <vector>

#include "common/dtype.h"
#include "common/thread_pool.h"
#include "kernels/cpu/simd.h"
#include "kernels/w4a16_linear.h"

namespace crosspoint {
namespace {

constexpr int64_t kTileN = 16;  // output columns per work item

struct W4A16Problem {
  const W4A16LinearArgs& args;
  const float* x;          // [num_rows, K] f32, dense, already permuted by k_perm
  const float* group_sum;  // [num_rows, num_groups] f32: sum of x over each group's rows
  int64_t num_groups;
};

// Columns n0..n0+8*NV of rows m0..m0+MR.
template <int MR, int NV>
CROSSPOINT_AVX2_TARGET void micro_kernel(const W4A16Problem& p, int64_t m0, int64_t n0) {
  const W4A16LinearArgs& a = p.args;
  const int64_t K = a.in_features, N = a.out_features, G = a.group_size;
  const __m256i low4 = _mm256_set1_epi32(0xF);
  __m256 out[MR][NV];
  for (int i = 0; i < MR; ++i)
    for (int v = 0; v < NV; ++v) out[i][v] = _mm256_setzero_ps();
  for (int64_t g = 0; g < p.num_groups; ++g) {
    __m256 acc[MR][NV];
    for (int i = 0; i < MR; ++i)
      for (int v = 0; v < NV; ++v) acc[i][v] = _mm256_setzero_ps();
    const int64_t k_end = std::min(K, (g + 1) * G);
    for (int64_t k8 = g * G; k8 < k_end; k8 += 8) {
      __m256i words[NV];
      for (int v = 0; v < NV; ++v)
        words[v] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.qweight + (k8 / 8) * N + n0 + 8 * v));
      for (int j = 0; j < 8; ++j) {
        __m256 q[NV];
        for (int v = 0; v < NV; ++v)
          q[v] = _mm256_cvtepi32_ps(_mm256_and_si256(_mm256_srli_epi32(words[v], 4 * j), low4));
        for (int i = 0; i < MR; ++i) {
          const __m256 xv = _mm256_broadcast_ss(p.x + (m0 + i) * K + k8 + j);
          for (int v = 0; v < NV; ++v) acc[i][v] = _mm256_fmadd_ps(xv, q[v], acc[i][v]);
        }
      }
    }
    for (int v = 0; v < NV; ++v) {
      const int64_t base = g * N + n0 + 8 * v;
      const __m256 scale = simd::load8_f16(a.scales + base);
      const __m256 zero =
          _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(a.zeros + base))));
      for (int i = 0; i < MR; ++i) {
        const __m256 xsum = _mm256_set1_ps(p.group_sum[(m0 + i) * p.num_groups + g]);
        out[i][v] = _mm256_fmadd_ps(scale, _mm256_fnmadd_ps(zero, xsum, acc[i][v]), out[i][v]);
      }
    }
  }
  for (int i = 0; i < MR; ++i) {
    for (int v = 0; v < NV; ++v) {
      if (a.bias) out[i][v] = _mm256_add_ps(out[i][v], _mm256_loadu_ps(a.bias + n0 + 8 * v));
      _mm256_storeu_ps(a.y + (m0 + i) * N + n0 + 8 * v, out[i][v]);
    }
  }
}

template <int NV>
CROSSPOINT_AVX2_TARGET void columns_avx2(const W4A16Problem& p, int64_t n0) {
  const int64_t M = p.args.num_rows;
  int64_t m = 0;
  for (; m + 4 <= M; m += 4) micro_kernel<4, NV>(p, m, n0);
  switch (M - m) {
    case 3: micro_kernel<3, NV>(p, m, n0); break;
    case 2: micro_kernel<2, NV>(p, m, n0); break;
    case 1: micro_kernel<1, NV>(p, m, n0); break;
    default: break;
  }
}

// One column at a time, same grouping as the vector path.
void columns_scalar(const W4A16Problem& p, int64_t n_begin, int64_t n_end) {
  const W4A16LinearArgs& a = p.args;
  const int64_t K = a.in_features, N = a.out_features, G = a.group_size;
  for (int64_t m = 0; m < a.num_rows; ++m) {
    for (int64_t n = n_begin; n < n_end; ++n) {
      float out = 0.0f;
      for (int64_t g = 0; g < p.num_groups; ++g) {
        float acc = 0.0f;
        for (int64_t k = g * G; k < std::min(K, (g + 1) * G); ++k) {
          const uint32_t q = (static_cast<uint32_t>(a.qweight[(k / 8) * N + n]) >> (4 * (k % 8))) & 0xFu;
          acc += p.x[m * K + k] * static_cast<float>(q);
        }
        const float zero = a.zeros[g * N + n];
        out += f16_to_f32(a.scales[g * N + n]) * (acc - zero * p.group_sum[m * p.num_groups + g]);
      }
      a.y[m * N + n] = out + (a.bias ? a.bias[n] : 0.0f);
    }
  }
}

}  // namespace

Status w4a16_linear(const W4A16LinearArgs& a) {
  if (a.g_idx != nullptr)
    return invalid_argument("w4a16_linear: g_idx is for the reference; sort rows and pass k_perm");
  CROSSPOINT_RETURN_IF_ERROR(validate_w4a16_linear_args(a, "w4a16_linear"));
  if (a.group_size % 8 != 0 || a.in_features % a.group_size != 0)
    return invalid_argument("w4a16_linear: group size " + std::to_string(a.group_size) +
                            " must be a multiple of 8 dividing in_features " + std::to_string(a.in_features));
  if (a.num_rows == 0) return Status::ok();

  const int64_t M = a.num_rows, K = a.in_features, N = a.out_features, G = a.group_size;
  const int64_t stride = a.x_row_stride ? a.x_row_stride : K;
  const int64_t num_groups = K / G;
  std::vector<float> x(static_cast<size_t>(M * K));                   // [M, K] f32, permuted
  std::vector<float> group_sum(static_cast<size_t>(M * num_groups));  // [M, num_groups] f32
  for (int64_t m = 0; m < M; ++m) {
    for (int64_t k = 0; k < K; ++k) x[m * K + k] = a.x[m * stride + (a.k_perm ? a.k_perm[k] : k)];
    for (int64_t g = 0; g < num_groups; ++g) {
      float sum = 0.0f;
      for (int64_t k = g * G; k < (g + 1) * G; ++k) sum += x[m * K + k];
      group_sum[m * num_groups + g] = sum;
    }
  }
  const W4A16Problem problem{a, x.data(), group_sum.data(), num_groups};
  const bool vector = simd::cpu_has_avx2();
  const int64_t num_tiles = (N + kTileN - 1) / kTileN;
  global_thread_pool().parallel_for(static_cast<size_t>(num_tiles), [&](size_t t_begin, size_t t_end) {
    const int64_t n_begin = static_cast<int64_t>(t_begin) * kTileN;
    const int64_t n_end = std::min(N, static_cast<int64_t>(t_end) * kTileN);
    int64_t n = n_begin;
    if (vector) {
      for (; n + 16 <= n_end; n += 16) columns_avx2<2>(problem, n);
      for (; n + 8 <= n_end; n += 8) columns_avx2<1>(problem, n);
    }
    if (n < n_end) columns_scalar(problem, n, n_end);
  });
  return Status::ok();
}

}  // namespace crosspoint
