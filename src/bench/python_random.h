// CPython's `random` module (Mersenne Twister MT19937 with CPython's integer seeding,
// getrandbits, _randbelow, shuffle, choice, random), so that the ShareGPT sample is the
// same one `vllm bench serve --seed S` draws: vLLM calls random.seed(S) then
// random.shuffle(entries). Only what the datasets need is here.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace crosspoint::bench {

class PythonRandom {
 public:
  // random.seed(seed) for a non-negative int seed (CPython uses abs(seed)).
  explicit PythonRandom(uint64_t seed);

  // random.getrandbits(k) for 0 <= k <= 32.
  uint32_t getrandbits(int k);
  // random._randbelow(n): uniform in [0, n), by rejection on bit_length(n) bits. n >= 1.
  uint64_t randbelow(uint64_t n);
  // random.random(): 53-bit float in [0, 1).
  double random();

  // random.shuffle(items): Fisher-Yates from the end, j = _randbelow(i + 1).
  template <typename T>
  void shuffle(std::vector<T>& items) {
    for (size_t i = items.size(); i-- > 1;) {
      const size_t j = static_cast<size_t>(randbelow(i + 1));
      std::swap(items[i], items[j]);
    }
  }
  // Index that random.choice(seq) picks from a sequence of `size` items (size >= 1).
  size_t choice_index(size_t size) { return static_cast<size_t>(randbelow(size)); }

 private:
  void init_genrand(uint32_t s);
  void init_by_array(const uint32_t* key, size_t key_length);
  uint32_t genrand_uint32();

  static constexpr int kN = 624;
  std::array<uint32_t, kN> state_{};
  int index_ = kN + 1;
};

}  // namespace crosspoint::bench
