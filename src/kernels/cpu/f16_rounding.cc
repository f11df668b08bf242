#include "kernels/cpu/simd.h"
#include "kernels/f16_rounding.h"

namespace crosspoint {
namespace {

// The operand order of max/min keeps a NaN a NaN, as the scalar clamp does.
CROSSPOINT_AVX2_TARGET void round_to_f16_avx2(const float* x, float* out, int64_t n) {
  const __m256 hi = _mm256_set1_ps(kF16Max), lo = _mm256_set1_ps(-kF16Max);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 clamped = _mm256_min_ps(hi, _mm256_max_ps(lo, _mm256_loadu_ps(x + i)));
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm256_cvtps_ph(clamped, _MM_FROUND_TO_NEAREST_INT)));
  }
  for (; i < n; ++i) out[i] = round_to_f16_saturated(x[i]);
}

}  // namespace

void round_to_f16(const float* x, float* out, int64_t n) {
  if (simd::cpu_has_avx2()) return round_to_f16_avx2(x, out, n);
  round_to_f16_ref(x, out, n);
}

}  // namespace crosspoint
