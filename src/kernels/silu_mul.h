// SwiGLU gate: out = silu(gate) * up, silu(x) = x / (1 + exp(-x)), fp32.
#pragma once

#include <cstdint>

#include "common/status.h"

namespace crosspoint {

struct SiluMulArgs {
  const float* gate = nullptr;  // [count] f32
  const float* up = nullptr;    // [count] f32
  float* out = nullptr;         // [count] f32; may equal gate or up
  int64_t count = 0;
};

Status silu_mul(const SiluMulArgs& args);
Status silu_mul_ref(const SiluMulArgs& args);

}  // namespace crosspoint
