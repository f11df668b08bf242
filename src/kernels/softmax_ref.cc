#include <cmath>
#include <limits>

#include "kernels/softmax.h"

namespace crosspoint {

Status softmax_ref(float* x, int64_t num_rows, int64_t num_cols) {
  if (num_rows < 0 || num_cols <= 0) return invalid_argument("softmax: num_cols must be positive");
  for (int64_t r = 0; r < num_rows; ++r) {
    float* row = x + r * num_cols;
    double max_value = -std::numeric_limits<double>::infinity();
    for (int64_t i = 0; i < num_cols; ++i) max_value = std::max<double>(max_value, row[i]);
    double sum = 0.0;
    for (int64_t i = 0; i < num_cols; ++i) sum += std::exp(row[i] - max_value);
    for (int64_t i = 0; i < num_cols; ++i) row[i] = static_cast<float>(std::exp(row[i] - max_value) / sum);
  }
  return Status::ok();
}

}  // namespace crosspoint
