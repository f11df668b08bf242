#include <cmath>

#include "kernels/rms_norm.h"
#include "kernels/weight_dtype.h"

namespace crosspoint {

Status rms_norm_ref(const RmsNormArgs& a) {
  CROSSPOINT_RETURN_IF_ERROR(check_weight_dtype("rms_norm", a.weight_dtype));
  for (int64_t r = 0; r < a.num_rows; ++r) {
    const float* x = a.x + r * a.dim;
    double sum_sq = 0.0;
    for (int64_t i = 0; i < a.dim; ++i) sum_sq += static_cast<double>(x[i]) * x[i];
    const double inv_rms = 1.0 / std::sqrt(sum_sq / a.dim + a.eps);
    for (int64_t i = 0; i < a.dim; ++i)
      a.y[r * a.dim + i] = static_cast<float>(x[i] * inv_rms * load_weight(a.weight, a.weight_dtype, i));
  }
  return Status::ok();
}

}  // namespace crosspoint
