#include "kernels/f16_rounding.h"

namespace crosspoint {

void round_to_f16_ref(const float* x, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = round_to_f16_saturated(x[i]);
}

void round_to_bf16(const float* x, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = bf16_to_f32(f32_to_bf16(x[i]));
}

}  // namespace crosspoint
