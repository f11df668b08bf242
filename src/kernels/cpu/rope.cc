#include <cmath>
#include <vector>

#include "common/thread_pool.h"
#include "kernels/rope.h"

namespace crosspoint {

Status validate_rope_args(const RopeArgs& a);  // rope_ref.cc

// cos/sin are computed once per token and shared by all its heads; tokens in parallel.
Status rope(const RopeArgs& a) {
  CROSSPOINT_RETURN_IF_ERROR(validate_rope_args(a));
  const int64_t stride = a.row_stride ? a.row_stride : a.num_heads * a.head_dim;
  const int64_t half = a.head_dim / 2;
  global_thread_pool().parallel_for(
      static_cast<size_t>(a.num_tokens),
      [&](size_t t0, size_t t1) {
        std::vector<float> cos_table(half), sin_table(half);  // [head_dim / 2] f32
        for (size_t t = t0; t < t1; ++t) {
          for (int64_t i = 0; i < half; ++i) {
            const float angle = static_cast<float>(a.positions[t]) * a.inv_freq[i];
            cos_table[i] = std::cos(angle) * a.attention_scaling;
            sin_table[i] = std::sin(angle) * a.attention_scaling;
          }
          for (int64_t h = 0; h < a.num_heads; ++h) {
            float* x = a.x + t * stride + h * a.head_dim;
            float* x_hi = x + half;
            for (int64_t i = 0; i < half; ++i) {
              const float x1 = x[i], x2 = x_hi[i];
              x[i] = x1 * cos_table[i] - x2 * sin_table[i];
              x_hi[i] = x2 * cos_table[i] + x1 * sin_table[i];
            }
          }
        }
      },
      8);
  return Status::ok();
}

}  // namespace crosspoint
