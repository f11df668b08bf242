// splitmix64's finaliser: every input bit reaches every output bit. For hashes and seeds that
// must be the same on every platform (block hashes, request seeds, test noise).
#pragma once

#include <cstdint>

namespace crosspoint {

inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace crosspoint
