#include <algorithm>
#include <cmath>

#include "kernels/rope.h"

namespace crosspoint {

std::vector<float> rope_inv_freq(int64_t head_dim, double theta) {
  // HF: 1.0 / (base ** (torch.arange(0, dim, 2).float() / dim)), all in fp32.
  std::vector<float> inv_freq(head_dim / 2);
  const float base = static_cast<float>(theta);
  for (int64_t i = 0; i < head_dim / 2; ++i) {
    const float exponent = static_cast<float>(2 * i) / static_cast<float>(head_dim);
    inv_freq[i] = 1.0f / std::pow(base, exponent);
  }
  return inv_freq;
}

void scale_rope_llama3(std::vector<float>& inv_freq, double factor, double low_freq_factor, double high_freq_factor,
                       double original_max_position) {
  const float pi = 3.141592653589793f;
  const float f = static_cast<float>(factor), low = static_cast<float>(low_freq_factor),
              high = static_cast<float>(high_freq_factor), old_len = static_cast<float>(original_max_position);
  const float low_freq_wavelen = old_len / low, high_freq_wavelen = old_len / high;
  for (float& freq : inv_freq) {
    const float wavelen = 2 * pi / freq;
    if (wavelen < high_freq_wavelen) continue;  // high frequencies: kept
    if (wavelen > low_freq_wavelen) {           // low frequencies: divided by the factor
      freq = freq / f;
      continue;
    }
    const float smooth = (old_len / wavelen - low) / (high - low);
    freq = (1 - smooth) * freq / f + smooth * freq;
  }
}

float scale_rope_yarn(std::vector<float>& inv_freq, int64_t head_dim, double theta, const YarnParameters& y) {
  const double dim = static_cast<double>(head_dim);
  auto get_mscale = [](double scale, double mscale) { return scale <= 1 ? 1.0 : 0.1 * mscale * std::log(scale) + 1.0; };
  double attention_factor = y.attention_factor;
  if (attention_factor <= 0) {
    attention_factor = y.mscale != 0 && y.mscale_all_dim != 0
                           ? get_mscale(y.factor, y.mscale) / get_mscale(y.factor, y.mscale_all_dim)
                           : get_mscale(y.factor, 1.0);
  }
  // Dimension index where a frequency makes num_rotations turns over the original context.
  auto correction_dim = [&](double num_rotations) {
    return dim * std::log(y.original_max_position / (num_rotations * 2 * M_PI)) / (2 * std::log(theta));
  };
  double low = correction_dim(y.beta_fast), high = correction_dim(y.beta_slow);
  if (y.truncate) {
    low = std::floor(low);
    high = std::ceil(high);
  }
  low = std::max(low, 0.0);
  high = std::min(high, dim - 1);
  if (low == high) high += 0.001;  // HF: prevents a division by zero
  const float f = static_cast<float>(y.factor);
  const float ramp_low = static_cast<float>(low), ramp_width = static_cast<float>(high - low);
  for (size_t i = 0; i < inv_freq.size(); ++i) {
    // HF's pos_freqs = base ** (arange(0, dim, 2) / dim) in fp32, as rope_inv_freq computes it.
    const float pos_freq =
        std::pow(static_cast<float>(theta), static_cast<float>(2 * i) / static_cast<float>(head_dim));
    const float extrapolation = 1.0f / pos_freq;
    const float interpolation = 1.0f / (f * pos_freq);
    const float ramp = std::clamp((static_cast<float>(i) - ramp_low) / ramp_width, 0.0f, 1.0f);
    const float keep = 1.0f - ramp;  // HF's inv_freq_extrapolation_factor
    inv_freq[i] = interpolation * (1.0f - keep) + extrapolation * keep;
  }
  return static_cast<float>(attention_factor);
}

Status validate_rope_args(const RopeArgs& a) {
  if (a.head_dim <= 0 || a.head_dim % 2 != 0)
    return invalid_argument("rope: head_dim " + std::to_string(a.head_dim) + " must be positive and even");
  if (a.num_tokens > 0 && (a.x == nullptr || a.positions == nullptr || a.inv_freq == nullptr))
    return invalid_argument("rope: null x, positions or inv_freq");
  return Status::ok();
}

Status rope_ref(const RopeArgs& a) {
  CROSSPOINT_RETURN_IF_ERROR(validate_rope_args(a));
  const int64_t stride = a.row_stride ? a.row_stride : a.num_heads * a.head_dim;
  const int64_t half = a.head_dim / 2;
  for (int64_t t = 0; t < a.num_tokens; ++t) {
    for (int64_t h = 0; h < a.num_heads; ++h) {
      float* x = a.x + t * stride + h * a.head_dim;
      for (int64_t i = 0; i < half; ++i) {
        const float angle = static_cast<float>(a.positions[t]) * a.inv_freq[i];
        const float c = std::cos(angle) * a.attention_scaling, s = std::sin(angle) * a.attention_scaling;
        const float x1 = x[i], x2 = x[i + half];
        x[i] = x1 * c - x2 * s;
        x[i + half] = x2 * c + x1 * s;
      }
    }
  }
  return Status::ok();
}

}  // namespace crosspoint
