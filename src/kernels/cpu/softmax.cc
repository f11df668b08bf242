#include <algorithm>
#include <cmath>
#include <limits>

#include "common/thread_pool.h"
#include "kernels/softmax.h"

namespace crosspoint {

void softmax_row(float* row, int64_t n) {
  float max_value = -std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < n; ++i) max_value = std::max(max_value, row[i]);
  float sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) {
    row[i] = std::exp(row[i] - max_value);
    sum += row[i];
  }
  const float inv_sum = 1.0f / sum;
  for (int64_t i = 0; i < n; ++i) row[i] *= inv_sum;
}

Status softmax(float* x, int64_t num_rows, int64_t num_cols) {
  if (num_rows < 0 || num_cols <= 0) return invalid_argument("softmax: num_cols must be positive");
  global_thread_pool().parallel_for(static_cast<size_t>(num_rows), [&](size_t r0, size_t r1) {
    for (size_t r = r0; r < r1; ++r) softmax_row(x + r * num_cols, num_cols);
  });
  return Status::ok();
}

}  // namespace crosspoint
