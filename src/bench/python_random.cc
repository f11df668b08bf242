// MT19937 as published by Matsumoto and Nishimura (init_genrand, init_by_array,
// genrand_int32), with the seeding and bit-drawing conventions of CPython's _random module.
#include "bench/python_random.h"

#include "common/status.h"

namespace crosspoint::bench {

namespace {
constexpr int kM = 397;
constexpr uint32_t kMatrixA = 0x9908b0dfu;
constexpr uint32_t kUpperMask = 0x80000000u;
constexpr uint32_t kLowerMask = 0x7fffffffu;
}  // namespace

PythonRandom::PythonRandom(uint64_t seed) {
  // CPython splits abs(seed) into 32-bit words, least significant first; 0 is one word.
  uint32_t key[2] = {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)};
  init_by_array(key, key[1] != 0 ? 2 : 1);
}

void PythonRandom::init_genrand(uint32_t s) {
  state_[0] = s;
  for (int i = 1; i < kN; ++i) {
    state_[i] = 1812433253u * (state_[i - 1] ^ (state_[i - 1] >> 30)) + static_cast<uint32_t>(i);
  }
  index_ = kN;
}

void PythonRandom::init_by_array(const uint32_t* key, size_t key_length) {
  init_genrand(19650218u);
  int i = 1;
  size_t j = 0;
  for (size_t k = (kN > key_length ? kN : key_length); k > 0; --k) {
    state_[i] = (state_[i] ^ ((state_[i - 1] ^ (state_[i - 1] >> 30)) * 1664525u)) + key[j] + static_cast<uint32_t>(j);
    ++i;
    ++j;
    if (i >= kN) {
      state_[0] = state_[kN - 1];
      i = 1;
    }
    if (j >= key_length) j = 0;
  }
  for (int k = kN - 1; k > 0; --k) {
    state_[i] = (state_[i] ^ ((state_[i - 1] ^ (state_[i - 1] >> 30)) * 1566083941u)) - static_cast<uint32_t>(i);
    ++i;
    if (i >= kN) {
      state_[0] = state_[kN - 1];
      i = 1;
    }
  }
  state_[0] = 0x80000000u;  // MSB is 1, assuring a non-zero initial array
}

uint32_t PythonRandom::genrand_uint32() {
  if (index_ >= kN) {
    int kk = 0;
    for (; kk < kN - kM; ++kk) {
      const uint32_t y = (state_[kk] & kUpperMask) | (state_[kk + 1] & kLowerMask);
      state_[kk] = state_[kk + kM] ^ (y >> 1) ^ ((y & 1u) ? kMatrixA : 0u);
    }
    for (; kk < kN - 1; ++kk) {
      const uint32_t y = (state_[kk] & kUpperMask) | (state_[kk + 1] & kLowerMask);
      state_[kk] = state_[kk + (kM - kN)] ^ (y >> 1) ^ ((y & 1u) ? kMatrixA : 0u);
    }
    const uint32_t y = (state_[kN - 1] & kUpperMask) | (state_[0] & kLowerMask);
    state_[kN - 1] = state_[kM - 1] ^ (y >> 1) ^ ((y & 1u) ? kMatrixA : 0u);
    index_ = 0;
  }
  uint32_t y = state_[index_++];
  y ^= (y >> 11);
  y ^= (y << 7) & 0x9d2c5680u;
  y ^= (y << 15) & 0xefc60000u;
  y ^= (y >> 18);
  return y;
}

uint32_t PythonRandom::getrandbits(int k) {
  CROSSPOINT_CHECK(k >= 0 && k <= 32, "getrandbits supports 0..32 bits");
  if (k == 0) return 0;
  return genrand_uint32() >> (32 - k);
}

uint64_t PythonRandom::randbelow(uint64_t n) {
  CROSSPOINT_CHECK(n >= 1, "randbelow needs n >= 1");
  CROSSPOINT_CHECK(n <= 0xffffffffull, "randbelow supports n < 2^32");
  int bits = 0;
  for (uint64_t v = n; v != 0; v >>= 1) ++bits;
  uint64_t r = getrandbits(bits);
  while (r >= n) r = getrandbits(bits);
  return r;
}

double PythonRandom::random() {
  const uint32_t a = genrand_uint32() >> 5;
  const uint32_t b = genrand_uint32() >> 6;
  return (a * 67108864.0 + b) * (1.0 / 9007199254740992.0);
}

}  // namespace crosspoint::bench
