// AVX2/FMA/F16C helpers for the CPU kernels. Functions carry a target attribute instead of
// relying on -march=native, so the sanitizer build (which turns -march=native off) still
// compiles and tests the vector paths; callers check cpu_has_avx2() at run time first.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "common/dtype.h"

#define CROSSPOINT_AVX2_TARGET __attribute__((target("avx2,fma,f16c")))

namespace crosspoint::simd {

// True when this CPU runs the AVX2+FMA+F16C paths.
inline bool cpu_has_avx2() {
  static const bool has =
      __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
  return has;
}

// 8 consecutive weights of a stored dtype -> 8 floats.
CROSSPOINT_AVX2_TARGET inline __m256 load8_f32(const float* p) { return _mm256_loadu_ps(p); }
CROSSPOINT_AVX2_TARGET inline __m256 load8_f16(const uint16_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
CROSSPOINT_AVX2_TARGET inline __m256 load8_bf16(const uint16_t* p) {
  const __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
}

CROSSPOINT_AVX2_TARGET inline float horizontal_sum(__m256 v) {
  __m128 lo = _mm256_castps256_ps128(v);
  const __m128 hi = _mm256_extractf128_ps(v, 1);
  lo = _mm_add_ps(lo, hi);
  __m128 shuf = _mm_movehdup_ps(lo);
  __m128 sums = _mm_add_ps(lo, shuf);
  shuf = _mm_movehl_ps(shuf, sums);
  sums = _mm_add_ss(sums, shuf);
  return _mm_cvtss_f32(sums);
}

CROSSPOINT_AVX2_TARGET inline float horizontal_max(__m256 v) {
  __m128 lo = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  lo = _mm_max_ps(lo, _mm_movehl_ps(lo, lo));
  lo = _mm_max_ss(lo, _mm_movehdup_ps(lo));
  return _mm_cvtss_f32(lo);
}

// Dot product of two f32 vectors of length n.
CROSSPOINT_AVX2_TARGET inline float dot_f32(const float* a, const float* b, int64_t n) {
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
    acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), acc1);
  }
  for (; i + 8 <= n; i += 8) acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
  float sum = horizontal_sum(_mm256_add_ps(acc0, acc1));
  for (; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

// y[i] += alpha * x[i]
CROSSPOINT_AVX2_TARGET inline void axpy_f32(float alpha, const float* x, float* y, int64_t n) {
  const __m256 a = _mm256_set1_ps(alpha);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(y + i, _mm256_fmadd_ps(a, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
  for (; i < n; ++i) y[i] += alpha * x[i];
}

}  // namespace crosspoint::simd
