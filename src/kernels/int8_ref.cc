#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "kernels/f16_rounding.h"
#include "kernels/int8.h"

namespace crosspoint {

int8_t f32_to_int8_rn(float v) {
  if (std::isnan(v)) return 0;
  const float r = std::nearbyint(v);  // half to even in the default rounding mode
  return static_cast<int8_t>(std::clamp(r, -128.0f, 127.0f));
}

namespace {

// What the activation quantisation reads: the rows, their stride and the static scale.
Status validate_int8_activation_args(const Int8LinearArgs& a) {
  if (a.num_rows < 0 || a.in_features <= 0)
    return invalid_argument("int8_linear: sizes must be positive (rows " + std::to_string(a.num_rows) + ", in " +
                            std::to_string(a.in_features) + ")");
  if (a.num_rows > 0 && a.x == nullptr) return invalid_argument("int8_linear: null x");
  if (a.x_row_stride != 0 && a.x_row_stride < a.in_features)
    return invalid_argument("int8_linear: x_row_stride smaller than in_features");
  if (!(a.input_scale >= 0.0f) || !std::isfinite(a.input_scale))
    return invalid_argument("int8_linear: input_scale must be finite and >= 0");
  return Status::ok();
}

}  // namespace

Status validate_int8_linear_args(const Int8LinearArgs& a) {
  CROSSPOINT_RETURN_IF_ERROR(validate_int8_activation_args(a));
  if (a.out_features <= 0)
    return invalid_argument("int8_linear: out_features must be positive, not " + std::to_string(a.out_features));
  if (a.num_rows > 0 && (a.weight == nullptr || a.weight_scale == nullptr || a.y == nullptr))
    return invalid_argument("int8_linear: null weight, weight_scale or y");
  return Status::ok();
}

Status int8_quantize_activations_ref(const Int8LinearArgs& a, int8_t* xq, float* x_scale) {
  CROSSPOINT_RETURN_IF_ERROR(validate_int8_activation_args(a));
  const int64_t K = a.in_features, stride = a.x_row_stride ? a.x_row_stride : K;
  std::vector<float> h(static_cast<size_t>(K));
  for (int64_t t = 0; t < a.num_rows; ++t) {
    float amax = 0.0f;
    for (int64_t k = 0; k < K; ++k) {
      h[k] = round_to_f16_saturated(a.x[t * stride + k]);
      amax = std::max(amax, std::fabs(h[k]));
    }
    int8_t* out = xq + t * K;
    if (a.input_scale > 0.0f) {
      x_scale[t] = a.input_scale;
      for (int64_t k = 0; k < K; ++k) out[k] = f32_to_int8_rn(h[k] / a.input_scale);
    } else {
      x_scale[t] = amax / 127.0f;
      const float inverse = amax > 0.0f ? 127.0f / amax : 0.0f;
      for (int64_t k = 0; k < K; ++k) out[k] = f32_to_int8_rn(h[k] * inverse);
    }
  }
  return Status::ok();
}

Status int8_linear_ref(const Int8LinearArgs& a) {
  CROSSPOINT_RETURN_IF_ERROR(validate_int8_linear_args(a));
  const int64_t K = a.in_features, N = a.out_features;
  std::vector<int8_t> xq(static_cast<size_t>(a.num_rows * K));
  std::vector<float> x_scale(static_cast<size_t>(a.num_rows));
  CROSSPOINT_RETURN_IF_ERROR(int8_quantize_activations_ref(a, xq.data(), x_scale.data()));
  for (int64_t t = 0; t < a.num_rows; ++t)
    for (int64_t n = 0; n < N; ++n) {
      int64_t sum = 0;
      for (int64_t k = 0; k < K; ++k) sum += int64_t{xq[t * K + k]} * a.weight[n * K + k];
      const float out = static_cast<float>(sum) * x_scale[t] * a.weight_scale[n];
      a.y[t * N + n] = out + (a.bias ? a.bias[n] : 0.0f);
    }
  return Status::ok();
}

}  // namespace crosspoint
