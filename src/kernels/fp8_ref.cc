#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "kernels/fp8.h"

namespace crosspoint {

const float* e4m3_to_f32_table() {
  static const std::vector<float> table = [] {
    std::vector<float> t(256);
    for (int q = 0; q < 256; ++q) t[q] = e4m3_to_f32(static_cast<uint8_t>(q));
    return t;
  }();
  return table.data();
}

Status validate_fp8_quantize_args(const Fp8QuantizeArgs& a) {
  if (a.num_rows < 0 || a.num_cols <= 0)
    return invalid_argument("fp8_quantize_per_token: sizes must be positive (rows " + std::to_string(a.num_rows) +
                            ", cols " + std::to_string(a.num_cols) + ")");
  if (a.num_rows > 0 && (a.x == nullptr || a.xq == nullptr || a.scale == nullptr))
    return invalid_argument("fp8_quantize_per_token: null x, xq or scale");
  if (a.x_row_stride != 0 && a.x_row_stride < a.num_cols)
    return invalid_argument("fp8_quantize_per_token: x_row_stride smaller than num_cols");
  if (!(a.static_scale >= 0.0f) || !std::isfinite(a.static_scale))
    return invalid_argument("fp8_quantize_per_token: static_scale must be finite and >= 0");
  return Status::ok();
}

Status fp8_quantize_per_token_ref(const Fp8QuantizeArgs& a) {
  CROSSPOINT_RETURN_IF_ERROR(validate_fp8_quantize_args(a));
  const int64_t stride = a.x_row_stride ? a.x_row_stride : a.num_cols;
  for (int64_t t = 0; t < a.num_rows; ++t) {
    const float* row = a.x + t * stride;
    std::vector<float> h(static_cast<size_t>(a.num_cols));
    for (int64_t k = 0; k < a.num_cols; ++k) h[k] = round_to_f16_saturated(row[k]);
    float amax = 0.0f;
    for (int64_t k = 0; k < a.num_cols; ++k) amax = std::max(amax, std::fabs(h[k]));
    const float scale = a.static_scale > 0.0f ? a.static_scale : std::max(amax / kE4M3Max, kFp8MinActScale);
    a.scale[t] = scale;
    for (int64_t k = 0; k < a.num_cols; ++k) a.xq[t * a.num_cols + k] = f32_to_e4m3(h[k] / scale);
  }
  return Status::ok();
}

Status validate_fp8_linear_args(const Fp8LinearArgs& a) {
  if (a.num_rows < 0 || a.in_features <= 0 || a.out_features <= 0)
    return invalid_argument("fp8_linear: sizes must be positive (rows " + std::to_string(a.num_rows) + ", in " +
                            std::to_string(a.in_features) + ", out " + std::to_string(a.out_features) + ")");
  if (a.num_rows > 0 && (a.x == nullptr || a.weight == nullptr || a.weight_scale == nullptr || a.y == nullptr))
    return invalid_argument("fp8_linear: null x, weight, weight_scale or y");
  if (a.x_row_stride != 0 && a.x_row_stride < a.in_features)
    return invalid_argument("fp8_linear: x_row_stride smaller than in_features");
  if (!(a.input_scale >= 0.0f) || !std::isfinite(a.input_scale))
    return invalid_argument("fp8_linear: input_scale must be finite and >= 0");
  return Status::ok();
}

Status fp8_linear_ref(const Fp8LinearArgs& a) {
  CROSSPOINT_RETURN_IF_ERROR(validate_fp8_linear_args(a));
  const int64_t K = a.in_features;
  std::vector<uint8_t> xq(static_cast<size_t>(a.num_rows * K));   // [num_rows, K] e4m3
  std::vector<float> act_scale(static_cast<size_t>(a.num_rows));  // [num_rows]
  CROSSPOINT_RETURN_IF_ERROR(
      fp8_quantize_per_token_ref({a.x, a.x_row_stride, xq.data(), act_scale.data(), a.num_rows, K, a.input_scale}));
  for (int64_t t = 0; t < a.num_rows; ++t) {
    for (int64_t n = 0; n < a.out_features; ++n) {
      double sum = 0.0;
      for (int64_t k = 0; k < K; ++k)
        sum += static_cast<double>(e4m3_to_f32(xq[t * K + k])) * e4m3_to_f32(a.weight[n * K + k]);
      double out = sum * act_scale[t] * a.weight_scale[n];
      if (a.bias) out += a.bias[n];
      a.y[t * a.out_features + n] = static_cast<float>(out);
    }
  }
  return Status::ok();
}

}  // namespace crosspoint
