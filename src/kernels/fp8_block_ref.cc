#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "kernels/f16_rounding.h"
#include "kernels/fp8.h"
#include "kernels/fp8_block.h"

namespace crosspoint {

namespace {

// What the activation quantisation reads: the rows, their stride and the group width.
Status validate_fp8_block_activation_args(const Fp8BlockLinearArgs& a) {
  if (a.num_rows < 0 || a.in_features <= 0 || a.block_k <= 0)
    return invalid_argument("fp8_block_linear: sizes must be positive (rows " + std::to_string(a.num_rows) + ", in " +
                            std::to_string(a.in_features) + ", block_k " + std::to_string(a.block_k) + ")");
  if (a.num_rows > 0 && a.x == nullptr) return invalid_argument("fp8_block_linear: null x");
  if (a.x_row_stride != 0 && a.x_row_stride < a.in_features)
    return invalid_argument("fp8_block_linear: x_row_stride smaller than in_features");
  return Status::ok();
}

}  // namespace

Status validate_fp8_block_linear_args(const Fp8BlockLinearArgs& a) {
  CROSSPOINT_RETURN_IF_ERROR(validate_fp8_block_activation_args(a));
  if (a.out_features <= 0 || a.block_n <= 0)
    return invalid_argument("fp8_block_linear: sizes must be positive (out " + std::to_string(a.out_features) +
                            ", block_n " + std::to_string(a.block_n) + ")");
  if (a.num_rows > 0 && (a.weight == nullptr || a.weight_scale == nullptr || a.y == nullptr))
    return invalid_argument("fp8_block_linear: null weight, weight_scale or y");
  return Status::ok();
}

Status fp8_block_quantize_ref(const Fp8BlockLinearArgs& a, uint8_t* xq, float* x_scale) {
  CROSSPOINT_RETURN_IF_ERROR(validate_fp8_block_activation_args(a));
  const int64_t K = a.in_features, stride = a.x_row_stride ? a.x_row_stride : K;
  const int64_t groups = (K + a.block_k - 1) / a.block_k;
  std::vector<float> h(static_cast<size_t>(K));
  for (int64_t t = 0; t < a.num_rows; ++t) {
    for (int64_t k = 0; k < K; ++k) h[k] = round_to_f16_saturated(a.x[t * stride + k]);
    for (int64_t g = 0; g < groups; ++g) {
      const int64_t begin = g * a.block_k, end = std::min(K, begin + a.block_k);
      float amax = 0.0f;
      for (int64_t k = begin; k < end; ++k) amax = std::max(amax, std::fabs(h[k]));
      const float s = std::max(amax, kFp8BlockAmaxFloor) / kE4M3Max;
      x_scale[t * groups + g] = s;
      for (int64_t k = begin; k < end; ++k) xq[t * K + k] = f32_to_e4m3(h[k] / s);
    }
  }
  return Status::ok();
}

Status fp8_block_linear_ref(const Fp8BlockLinearArgs& a) {
  CROSSPOINT_RETURN_IF_ERROR(validate_fp8_block_linear_args(a));
  const int64_t K = a.in_features, N = a.out_features;
  const int64_t groups = (K + a.block_k - 1) / a.block_k;
  std::vector<uint8_t> xq(static_cast<size_t>(a.num_rows * K));
  std::vector<float> x_scale(static_cast<size_t>(a.num_rows * groups));
  CROSSPOINT_RETURN_IF_ERROR(fp8_block_quantize_ref(a, xq.data(), x_scale.data()));
  for (int64_t t = 0; t < a.num_rows; ++t) {
    for (int64_t n = 0; n < N; ++n) {
      double out = 0.0;
      for (int64_t g = 0; g < groups; ++g) {
        double sum = 0.0;
        for (int64_t k = g * a.block_k; k < std::min(K, (g + 1) * a.block_k); ++k)
          sum += static_cast<double>(e4m3_to_f32(xq[t * K + k])) * e4m3_to_f32(a.weight[n * K + k]);
        out += sum * x_scale[t * groups + g] * a.weight_scale[(n / a.block_n) * groups + g];
      }
      if (a.bias) out += a.bias[n];
      a.y[t * N + n] = static_cast<float>(out);
    }
  }
  return Status::ok();
}

}  // namespace crosspoint
