#include "quant/int8_quantizer.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "common/thread_pool.h"
#include "kernels/int8.h"

namespace crosspoint {

Int8Quantized quantize_int8_per_channel(const float* w, int64_t N, int64_t K) {
  Int8Quantized out;
  out.weight.resize(static_cast<size_t>(N * K));
  out.scale.resize(static_cast<size_t>(N));
  // Rows are independent: split over the pool, the same bytes on any thread count.
  global_thread_pool().parallel_for(static_cast<size_t>(N), [&](size_t begin, size_t end) {
    for (int64_t n = static_cast<int64_t>(begin); n < static_cast<int64_t>(end); ++n) {
      float amax = 0.0f;
      for (int64_t k = 0; k < K; ++k) amax = std::max(amax, std::fabs(w[n * K + k]));
      const float scale = std::max(amax, std::numeric_limits<float>::epsilon()) / 127.5f;
      out.scale[n] = scale;
      for (int64_t k = 0; k < K; ++k) out.weight[n * K + k] = f32_to_int8_rn(w[n * K + k] / scale);
    }
  });
  return out;
}

}  // namespace crosspoint
