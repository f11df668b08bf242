#include <cmath>

#include "common/thread_pool.h"
#include "kernels/silu_mul.h"

namespace crosspoint {

Status silu_mul(const SiluMulArgs& a) {
  if (a.count > 0 && (!a.gate || !a.up || !a.out)) return invalid_argument("silu_mul: null pointer");
  global_thread_pool().parallel_for(
      static_cast<size_t>(a.count),
      [&](size_t i0, size_t i1) {
        for (size_t i = i0; i < i1; ++i) {
          const float g = a.gate[i];
          a.out[i] = g / (1.0f + std::exp(-g)) * a.up[i];
        }
      },
      4096);
  return Status::ok();
}

}  // namespace crosspoint
