#include "kernels_cuda/reference.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "common/dtype.h"

namespace crosspoint::cuda::testing {

bool gpu_available() {
  static const bool available = [] {
    int count = 0;
    return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
  }();
  return available;
}

std::vector<uint16_t> random_f16(std::mt19937& rng, size_t count, float lo, float hi) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<uint16_t> out(count);
  for (auto& v : out) v = crosspoint::f32_to_f16(dist(rng));
  return out;
}

std::vector<uint8_t> random_e4m3(std::mt19937& rng, size_t count) {
  std::uniform_int_distribution<int> code(0, 0xFD);
  std::vector<uint8_t> out(count);
  for (auto& v : out) {
    const int c = code(rng);
    v = static_cast<uint8_t>((c & 0x7F) == 0x7F ? 0 : c);  // no NaN codes
  }
  return out;
}

std::vector<float> f16_to_f32(const std::vector<uint16_t>& bits) {
  std::vector<float> out(bits.size());
  for (size_t i = 0; i < bits.size(); ++i) out[i] = crosspoint::f16_to_f32(bits[i]);
  return out;
}

uint8_t e4m3_from_f32(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  const uint8_t sign = static_cast<uint8_t>((bits >> 24) & 0x80u);
  const float magnitude = std::fabs(value);
  if (std::isnan(value)) return sign | 0x7Fu;
  if (magnitude >= 448.0f) return sign | 0x7Eu;              // saturate (values in [448, 464) round there anyway)
  if (magnitude < 0.015625f) {                               // below 2^-6: subnormal steps of 2^-9
    const float steps = std::nearbyint(magnitude * 512.0f);  // exact scaling; ties to even
    return sign | static_cast<uint8_t>(steps);               // 8 steps is the smallest normal, 0x08
  }
  int exponent = static_cast<int>((bits >> 23) & 0xFFu) - 127;
  const uint32_t mantissa = bits & 0x7FFFFFu;
  uint32_t kept = mantissa >> 20;
  const uint32_t rest = mantissa & 0xFFFFFu;
  if (rest > 0x80000u || (rest == 0x80000u && (kept & 1u))) ++kept;
  if (kept == 8) {
    kept = 0;
    ++exponent;
  }
  return sign | static_cast<uint8_t>(((exponent + 7) << 3) | kept);
}

float e4m3_to_f32(uint8_t code) {
  const float sign = (code & 0x80u) ? -1.0f : 1.0f;
  const int exponent = (code >> 3) & 0xF;
  const int mantissa = code & 0x7;
  if (exponent == 0xF && mantissa == 0x7) return std::numeric_limits<float>::quiet_NaN();
  if (exponent == 0) return sign * std::ldexp(static_cast<float>(mantissa), -9);
  return sign * std::ldexp(1.0f + mantissa / 8.0f, exponent - 7);
}

void fp8_quantize_per_token_ref(const std::vector<uint16_t>& x, int m, int k, std::vector<uint8_t>* q,
                                std::vector<float>* scale) {
  q->assign(static_cast<size_t>(m) * k, 0);
  scale->assign(m, 0.f);
  for (int i = 0; i < m; ++i) {
    float amax = 0.f;
    for (int kk = 0; kk < k; ++kk)
      amax = std::fmax(amax, std::fabs(crosspoint::f16_to_f32(x[static_cast<size_t>(i) * k + kk])));
    const float s = std::fmax(amax / 448.0f, 1.0f / (448.0f * 512.0f));
    (*scale)[i] = s;
    for (int kk = 0; kk < k; ++kk) {
      (*q)[static_cast<size_t>(i) * k + kk] =
          e4m3_from_f32(crosspoint::f16_to_f32(x[static_cast<size_t>(i) * k + kk]) / s);
    }
  }
}

double relative_error_f16(const std::vector<uint16_t>& y, const std::vector<double>& ref) {
  double num = 0.0, den = 0.0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double v = crosspoint::f16_to_f32(y[i]);
    if (!std::isfinite(v)) return std::numeric_limits<double>::infinity();
    num += (v - ref[i]) * (v - ref[i]);
    den += ref[i] * ref[i];
  }
  return std::sqrt(num / std::fmax(den, 1e-30));
}

}  // namespace crosspoint::cuda::testing
