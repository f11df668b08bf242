// Fixture reading and random data shared by the quantisation tests.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

namespace crosspoint::quant_testing {

inline std::string fixture_path(const std::string& name) {
  return std::string(CROSSPOINT_FIXTURES_DIR) + "/quant/" + name;
}

// Whole file as bytes; an empty vector (and a test failure) when missing.
inline std::vector<uint8_t> read_fixture(const std::string& name) {
  std::ifstream in(fixture_path(name), std::ios::binary);
  EXPECT_TRUE(in.good()) << "missing fixture " << fixture_path(name);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Little cursor over fixture bytes.
class ByteReader {
 public:
  explicit ByteReader(const std::vector<uint8_t>& bytes) : bytes_(bytes) {}
  template <typename T>
  std::vector<T> take(size_t count) {
    std::vector<T> out(count);
    EXPECT_LE(pos_ + count * sizeof(T), bytes_.size()) << "fixture too short";
    if (pos_ + count * sizeof(T) <= bytes_.size()) {
      std::memcpy(out.data(), bytes_.data() + pos_, count * sizeof(T));
      pos_ += count * sizeof(T);
    }
    return out;
  }
  template <typename T>
  T take_one() {
    return take<T>(1)[0];
  }
  bool at_end() const { return pos_ == bytes_.size(); }

 private:
  const std::vector<uint8_t>& bytes_;
  size_t pos_ = 0;
};

inline std::vector<float> random_normal(size_t n, uint32_t seed, float stddev = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, stddev);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

inline float max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  float worst = 0.0f;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) worst = std::max(worst, std::fabs(a[i] - b[i]));
  return worst;
}

inline float max_abs(const std::vector<float>& a) {
  float worst = 0.0f;
  for (float v : a) worst = std::max(worst, std::fabs(v));
  return worst;
}

}  // namespace crosspoint::quant_testing
