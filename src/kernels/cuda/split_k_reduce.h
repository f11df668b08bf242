// The second half of a K-split GEMM: adds the fp32 partial sums of the K slices in slice order
// and rounds once to fp16, so the result does not depend on which slice finished first.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "common/status.h"

namespace crosspoint::cuda {

//   partials  [splits][M, N] fp32, rows of n elements, slices split_stride elements apart
//   y         [M, N] fp16, row stride y_stride elements
// y[m][n] = fp16(((partials[0][m][n] + partials[1][m][n]) + ...) + partials[splits-1][m][n]).
// A programmatic launch: the partials are read only after the GEMM that wrote them completed.
Status split_k_sum_to_f16(const float* partials, int splits, int64_t split_stride, uint16_t* y, int64_t y_stride,
                          int m, int n, cudaStream_t stream);

// The same sum on the host, for tests.
void split_k_sum_to_f16_reference(const float* partials, int splits, int64_t split_stride, uint16_t* y,
                                  int64_t y_stride, int m, int n);

}  // namespace crosspoint::cuda
