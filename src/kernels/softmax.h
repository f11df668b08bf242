// Row-wise softmax in place, fp32, max-subtracted: x[r] = exp(x[r] - max) / sum.
#pragma once

#include <cstdint>

#include "common/status.h"

namespace crosspoint {

Status softmax(float* x /*[num_rows, num_cols] f32*/, int64_t num_rows, int64_t num_cols);
Status softmax_ref(float* x, int64_t num_rows, int64_t num_cols);

// One row, single-threaded: the building block the attention kernel uses.
void softmax_row(float* x /*[num_cols] f32*/, int64_t num_cols);

}  // namespace crosspoint
