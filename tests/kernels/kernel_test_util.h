// Random inputs and comparisons shared by the kernel tests.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "common/dtype.h"

namespace crosspoint::testing {

inline std::vector<float> random_floats(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

// Values stored as `dtype` bytes (f32, f16, bf16), plus their exact f32 values.
struct StoredWeights {
  std::vector<uint8_t> bytes;
  std::vector<float> values;
};

inline StoredWeights store_as(const std::vector<float>& v, DType dtype) {
  StoredWeights w;
  w.values.resize(v.size());
  w.bytes.resize(v.size() * dtype_size(dtype));
  for (size_t i = 0; i < v.size(); ++i) {
    if (dtype == DType::kF16) {
      const uint16_t h = f32_to_f16(v[i]);
      reinterpret_cast<uint16_t*>(w.bytes.data())[i] = h;
      w.values[i] = f16_to_f32(h);
    } else if (dtype == DType::kBF16) {
      const uint16_t b = f32_to_bf16(v[i]);
      reinterpret_cast<uint16_t*>(w.bytes.data())[i] = b;
      w.values[i] = bf16_to_f32(b);
    } else {
      reinterpret_cast<float*>(w.bytes.data())[i] = v[i];
      w.values[i] = v[i];
    }
  }
  return w;
}

inline float max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  float worst = 0.0f;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) worst = std::max(worst, std::fabs(a[i] - b[i]));
  return worst;
}

}  // namespace crosspoint::testing
