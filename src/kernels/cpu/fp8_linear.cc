// Fast FP8 linear. Activations are rounded to fp16 and quantised per token (bit-exact with the
// reference), then decoded back to f32 once per token; the weight bytes stream through an AVX2
// micro-kernel that turns 8 e4m3 bytes into 8 f32 with a bit shuffle: placing the 7 magnitude bits of an
// e4m3 byte at bit 7 of an f16 gives the same value times 2^-8 (exponent bias 15 vs 7, the
// same 3 mantissa bits, subnormals included), so cvtph does the rest and the 2^8 is folded
// into the output scale. Tiles of kFp8TileN weight rows are split over the global thread pool.
#include <algorithm>
#include <cmath>
#include <vector>

#include "common/thread_pool.h"
#include "kernels/cpu/simd.h"
#include "kernels/fp8.h"

namespace crosspoint {
namespace {

constexpr int64_t kFp8TileN = 16;        // weight rows per work item
constexpr float kF16ShiftUndo = 256.0f;  // 2^8: the f16 trick yields value * 2^-8

// e4m3 byte -> its value * 2^-8, the scalar twin of load8_e4m3.
inline float e4m3_scaled(uint8_t q) { return e4m3_to_f32(q) * (1.0f / kF16ShiftUndo); }

CROSSPOINT_AVX2_TARGET inline __m256 load8_e4m3(const uint8_t* p) {
  const __m128i bytes = _mm_cvtepu8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
  const __m128i magnitude = _mm_slli_epi16(_mm_and_si128(bytes, _mm_set1_epi16(0x7F)), 7);
  const __m128i sign = _mm_slli_epi16(_mm_and_si128(bytes, _mm_set1_epi16(0x80)), 8);
  return _mm256_cvtph_ps(_mm_or_si128(magnitude, sign));
}

struct Fp8Problem {
  const Fp8LinearArgs& args;
  const float* xf;         // [num_rows, K] f32: decoded xq (exact e4m3 values)
  const float* act_scale;  // [num_rows]
};

// Writes y for rows m0..m0+MR and weight rows n0..n0+NR.
template <int MR, int NR>
CROSSPOINT_AVX2_TARGET void micro_kernel(const Fp8Problem& p, int64_t m0, int64_t n0) {
  const Fp8LinearArgs& a = p.args;
  const int64_t K = a.in_features;
  __m256 acc[MR][NR];
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; ++j) acc[i][j] = _mm256_setzero_ps();
  int64_t k = 0;
  for (; k + 8 <= K; k += 8) {
    __m256 w[NR];
    for (int j = 0; j < NR; ++j) w[j] = load8_e4m3(a.weight + (n0 + j) * K + k);
    for (int i = 0; i < MR; ++i) {
      const __m256 xv = _mm256_loadu_ps(p.xf + (m0 + i) * K + k);
      for (int j = 0; j < NR; ++j) acc[i][j] = _mm256_fmadd_ps(xv, w[j], acc[i][j]);
    }
  }
  for (int i = 0; i < MR; ++i) {
    for (int j = 0; j < NR; ++j) {
      const int64_t n = n0 + j;
      float sum = simd::horizontal_sum(acc[i][j]);
      for (int64_t kk = k; kk < K; ++kk) sum += p.xf[(m0 + i) * K + kk] * e4m3_scaled(a.weight[n * K + kk]);
      float out = sum * kF16ShiftUndo * p.act_scale[m0 + i] * a.weight_scale[n];
      if (a.bias) out += a.bias[n];
      a.y[(m0 + i) * a.out_features + n] = out;
    }
  }
}

template <int MR>
CROSSPOINT_AVX2_TARGET void row_group(const Fp8Problem& p, int64_t m0, int64_t n_begin, int64_t n_end) {
  int64_t n = n_begin;
  for (; n + 2 <= n_end; n += 2) micro_kernel<MR, 2>(p, m0, n);
  if (n < n_end) micro_kernel<MR, 1>(p, m0, n);
}

CROSSPOINT_AVX2_TARGET void tile_avx2(const Fp8Problem& p, int64_t n_begin, int64_t n_end) {
  const int64_t M = p.args.num_rows;
  int64_t m = 0;
  for (; m + 4 <= M; m += 4) row_group<4>(p, m, n_begin, n_end);
  switch (M - m) {
    case 3: row_group<3>(p, m, n_begin, n_end); break;
    case 2: row_group<2>(p, m, n_begin, n_end); break;
    case 1: row_group<1>(p, m, n_begin, n_end); break;
    default: break;
  }
}

void tile_scalar(const Fp8Problem& p, int64_t n_begin, int64_t n_end) {
  const Fp8LinearArgs& a = p.args;
  const int64_t K = a.in_features;
  for (int64_t m = 0; m < a.num_rows; ++m) {
    for (int64_t n = n_begin; n < n_end; ++n) {
      float sum = 0.0f;
      for (int64_t k = 0; k < K; ++k) sum += p.xf[m * K + k] * e4m3_to_f32(a.weight[n * K + k]);
      a.y[m * a.out_features + n] = sum * p.act_scale[m] * a.weight_scale[n] + (a.bias ? a.bias[n] : 0.0f);
    }
  }
}

CROSSPOINT_AVX2_TARGET float row_amax_avx2(const float* row, int64_t n) {
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  __m256 vmax = _mm256_setzero_ps();
  int64_t k = 0;
  for (; k + 8 <= n; k += 8) vmax = _mm256_max_ps(vmax, _mm256_and_ps(_mm256_loadu_ps(row + k), abs_mask));
  float amax = simd::horizontal_max(vmax);
  for (; k < n; ++k) amax = std::max(amax, std::fabs(row[k]));
  return amax;
}

}  // namespace

Status fp8_quantize_per_token(const Fp8QuantizeArgs& a) {
  CROSSPOINT_RETURN_IF_ERROR(validate_fp8_quantize_args(a));
  const int64_t stride = a.x_row_stride ? a.x_row_stride : a.num_cols;
  const bool vector = simd::cpu_has_avx2();
  global_thread_pool().parallel_for(static_cast<size_t>(a.num_rows), [&](size_t t_begin, size_t t_end) {
    std::vector<float> h(static_cast<size_t>(a.num_cols));  // the row as the GPU holds it (fp16)
    for (int64_t t = static_cast<int64_t>(t_begin); t < static_cast<int64_t>(t_end); ++t) {
      const float* row = a.x + t * stride;
      float amax = 0.0f;
      round_to_f16(row, h.data(), a.num_cols);
      if (a.static_scale > 0.0f) {
        // a static activation scale: no amax
      } else if (vector) {
        amax = row_amax_avx2(h.data(), a.num_cols);
      } else {
        for (int64_t k = 0; k < a.num_cols; ++k) amax = std::max(amax, std::fabs(h[k]));
      }
      const float scale = a.static_scale > 0.0f ? a.static_scale : std::max(amax / kE4M3Max, kFp8MinActScale);
      a.scale[t] = scale;
      uint8_t* out = a.xq + t * a.num_cols;
      for (int64_t k = 0; k < a.num_cols; ++k) out[k] = f32_to_e4m3(h[k] / scale);
    }
  });
  return Status::ok();
}

Status fp8_linear(const Fp8LinearArgs& a) {
  CROSSPOINT_RETURN_IF_ERROR(validate_fp8_linear_args(a));
  if (a.num_rows == 0) return Status::ok();
  const int64_t K = a.in_features;
  const bool vector = simd::cpu_has_avx2();
  std::vector<uint8_t> xq(static_cast<size_t>(a.num_rows * K));   // [num_rows, K] e4m3
  std::vector<float> act_scale(static_cast<size_t>(a.num_rows));  // [num_rows]
  std::vector<float> xf(static_cast<size_t>(a.num_rows * K));     // [num_rows, K] f32
  CROSSPOINT_RETURN_IF_ERROR(
      fp8_quantize_per_token({a.x, a.x_row_stride, xq.data(), act_scale.data(), a.num_rows, K, a.input_scale}));
  const float* table = e4m3_to_f32_table();
  for (size_t i = 0; i < xq.size(); ++i) xf[i] = table[xq[i]];
  const Fp8Problem problem{a, xf.data(), act_scale.data()};
  const int64_t num_tiles = (a.out_features + kFp8TileN - 1) / kFp8TileN;
  global_thread_pool().parallel_for(static_cast<size_t>(num_tiles), [&](size_t t_begin, size_t t_end) {
    const int64_t n_begin = static_cast<int64_t>(t_begin) * kFp8TileN;
    const int64_t n_end = std::min(a.out_features, static_cast<int64_t>(t_end) * kFp8TileN);
    if (!vector) return tile_scalar(problem, n_begin, n_end);
    for (int64_t n0 = n_begin; n0 < n_end; n0 += kFp8TileN) tile_avx2(problem, n0, std::min(n_end, n0 + kFp8TileN));
  });
  return Status::ok();
}

}  // namespace crosspoint
