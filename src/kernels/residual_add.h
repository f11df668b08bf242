// Residual connection: y += x, fp32.
#pragma once

#include <cstdint>

#include "common/status.h"

namespace crosspoint {

Status residual_add(float* y /*[count] f32*/, const float* x /*[count] f32*/, int64_t count);
Status residual_add_ref(float* y, const float* x, int64_t count);

}  // namespace crosspoint
