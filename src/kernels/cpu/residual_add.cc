#include "common/thread_pool.h"
#include "kernels/residual_add.h"

namespace crosspoint {

// Memory bound; the loop auto-vectorises. Threads only for prefill-sized arrays.
Status residual_add(float* y, const float* x, int64_t count) {
  if (count > 0 && (!y || !x)) return invalid_argument("residual_add: null pointer");
  global_thread_pool().parallel_for(
      static_cast<size_t>(count),
      [&](size_t i0, size_t i1) {
        for (size_t i = i0; i < i1; ++i) y[i] += x[i];
      },
      16384);
  return Status::ok();
}

}  // namespace crosspoint
