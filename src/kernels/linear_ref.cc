#include "kernels/linear.h"
#include "kernels/weight_dtype.h"

namespace crosspoint {

Status validate_linear_args(const LinearArgs& a) {
  if (a.num_rows < 0 || a.in_features <= 0 || a.out_features <= 0)
    return invalid_argument("linear: sizes must be positive (rows " + std::to_string(a.num_rows) + ", in " +
                            std::to_string(a.in_features) + ", out " + std::to_string(a.out_features) + ")");
  if (a.num_rows > 0 && (a.x == nullptr || a.weight == nullptr || a.y == nullptr))
    return invalid_argument("linear: null x, weight or y");
  if (a.x_row_stride != 0 && a.x_row_stride < a.in_features)
    return invalid_argument("linear: x_row_stride smaller than in_features");
  return check_weight_dtype("linear", a.weight_dtype);
}

Status linear_ref(const LinearArgs& a) {
  CROSSPOINT_RETURN_IF_ERROR(validate_linear_args(a));
  const int64_t stride = a.x_row_stride ? a.x_row_stride : a.in_features;
  for (int64_t m = 0; m < a.num_rows; ++m) {
    for (int64_t n = 0; n < a.out_features; ++n) {
      double sum = a.bias ? a.bias[n] : 0.0;
      for (int64_t k = 0; k < a.in_features; ++k)
        sum += static_cast<double>(a.x[m * stride + k]) * load_weight(a.weight, a.weight_dtype, n * a.in_features + k);
      a.y[m * a.out_features + n] = static_cast<float>(sum);
    }
  }
  return Status::ok();
}

}  // namespace crosspoint
