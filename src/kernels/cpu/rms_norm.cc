#include <cmath>
#include <vector>

#include "common/thread_pool.h"
#include "kernels/rms_norm.h"
#include "kernels/weight_dtype.h"

namespace crosspoint {

// Rows in parallel; the compiler vectorises the inner loops (fp32 throughout, like HF).
Status rms_norm(const RmsNormArgs& a) {
  CROSSPOINT_RETURN_IF_ERROR(check_weight_dtype("rms_norm", a.weight_dtype));
  std::vector<float> weight(a.dim);  // [dim] f32
  for (int64_t i = 0; i < a.dim; ++i) weight[i] = load_weight(a.weight, a.weight_dtype, i);
  global_thread_pool().parallel_for(
      static_cast<size_t>(a.num_rows),
      [&](size_t r0, size_t r1) {
        for (size_t r = r0; r < r1; ++r) {
          const float* x = a.x + r * a.dim;
          float* y = a.y + r * a.dim;
          float sum_sq = 0.0f;
          for (int64_t i = 0; i < a.dim; ++i) sum_sq += x[i] * x[i];
          const float inv_rms = 1.0f / std::sqrt(sum_sq / static_cast<float>(a.dim) + a.eps);
          for (int64_t i = 0; i < a.dim; ++i) y[i] = (x[i] * inv_rms) * weight[i];
        }
      },
      4);
  return Status::ok();
}

}  // namespace crosspoint
