// Rotary position embedding, "rotate half" form as Hugging Face Llama/Qwen2 apply it:
//   out[i]        = x[i] * cos(p * f_i) - x[i + D/2] * sin(p * f_i)
//   out[i + D/2]  = x[i + D/2] * cos(p * f_i) + x[i] * sin(p * f_i),   i < D/2
// with f_i = 1 / theta^(2i / D) computed in fp32 exactly as HF's inv_freq.
#pragma once

#include <cstdint>
#include <vector>

#include "common/status.h"

namespace crosspoint {

// [head_dim / 2] f32 inverse frequencies, HF's default rope (no scaling).
std::vector<float> rope_inv_freq(int64_t head_dim, double theta);

// Llama 3's frequency scaling (HF's _compute_llama3_parameters, in fp32 as it computes):
// wavelengths 2 pi / f above original_max_position / low_freq_factor are divided by factor,
// those below original_max_position / high_freq_factor kept, the ones between blended.
void scale_rope_llama3(std::vector<float>& inv_freq, double factor, double low_freq_factor, double high_freq_factor,
                       double original_max_position);

// YaRN (HF's _compute_yarn_parameters, fp32 where it computes in fp32): frequencies whose
// dimension index lies below the correction range (fast rotations) kept, those above it
// divided by factor, a linear ramp between; the range comes from beta_fast / beta_slow
// rotations over original_max_position. Returns the attention factor HF multiplies cos and sin
// by: attention_factor when given, else 0.1 * ln(factor) + 1 (with mscale / mscale_all_dim as
// HF's get_mscale ratio when both are non-zero).
struct YarnParameters {
  double factor = 1.0;
  double original_max_position = 0.0;
  double beta_fast = 32.0;
  double beta_slow = 1.0;
  bool truncate = true;
  double attention_factor = 0.0;  // 0: derived from factor (and mscale)
  double mscale = 0.0;
  double mscale_all_dim = 0.0;
};
float scale_rope_yarn(std::vector<float>& inv_freq, int64_t head_dim, double theta, const YarnParameters& yarn);

struct RopeArgs {
  float* x = nullptr;      // [num_tokens, num_heads, head_dim] f32, rotated in place;
  int64_t row_stride = 0;  //   tokens row_stride elements apart (0: num_heads * head_dim)
  int64_t num_tokens = 0;
  int64_t num_heads = 0;
  int64_t head_dim = 0;                // even
  const int32_t* positions = nullptr;  // [num_tokens] absolute positions
  const float* inv_freq = nullptr;     // [head_dim / 2] from rope_inv_freq
  float attention_scaling = 1.0f;      // cos and sin are multiplied by it (YaRN's attention factor)
};

Status rope(const RopeArgs& args);
Status rope_ref(const RopeArgs& args);

}  // namespace crosspoint
