// W8A8-INT8 linear on the CPU: the reference's activation quantisation, then int32 dot
// products (the compiler vectorises the widening multiply-add), output channels split over
// the global pool. Same bits as the reference: the sums are exact.
#include <vector>

#include "common/thread_pool.h"
#include "kernels/int8.h"

namespace crosspoint {

Status int8_linear(const Int8LinearArgs& a) {
  CROSSPOINT_RETURN_IF_ERROR(validate_int8_linear_args(a));
  if (a.num_rows == 0) return Status::ok();
  const int64_t K = a.in_features, N = a.out_features, M = a.num_rows;
  std::vector<int8_t> xq(static_cast<size_t>(M * K));
  std::vector<float> x_scale(static_cast<size_t>(M));
  CROSSPOINT_RETURN_IF_ERROR(int8_quantize_activations_ref(a, xq.data(), x_scale.data()));
  global_thread_pool().parallel_for(
      static_cast<size_t>(N),
      [&](size_t n_begin, size_t n_end) {
        for (int64_t n = static_cast<int64_t>(n_begin); n < static_cast<int64_t>(n_end); ++n) {
          const int8_t* w = a.weight + n * K;
          for (int64_t t = 0; t < M; ++t) {
            const int8_t* x = xq.data() + t * K;
            int32_t sum = 0;
            for (int64_t k = 0; k < K; ++k) sum += int32_t{x[k]} * int32_t{w[k]};
            a.y[t * N + n] = static_cast<float>(sum) * x_scale[t] * a.weight_scale[n] + (a.bias ? a.bias[n] : 0.0f);
          }
        }
      },
      16);
  return Status::ok();
}

}  // namespace crosspoint
