// W4A16 weights back to fp16: W[n, k] = s[g(k), n] * (q[k, n] - z), one fp16 rounding (z = 8, or
// the packed zero points of asymmetric weights), from the
// packed layout of w4a16_gemm.h, so that a many-row W4A16 linear can run as an fp16 GEMM
// (cuBLASLt) where the tensor cores, not the weight bytes, set its time (run_cuda_linear picks
// it from kW4A16DequantMinRows rows; w4a16_gemm.h explains the choice).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "common/status.h"

namespace crosspoint::cuda {

// w [N, K] fp16, row stride w_stride elements (>= K, a multiple of 8), in the packed weight's
// input-row order (act-order weights keep their sorted rows: the activations are permuted to
// match, as for w4a16_gemm). The products are those the W4A16 kernels form before their MMAs,
// bit for bit. Shapes as w4a16_gemm (K % 64 == 0, N % 16 == 0, group size -1, 32 or a multiple
// of 64); others are refused with a Status naming the field.
// packed_zeros: W4A16PackedWeight::zeros on the device, or nullptr (symmetric).
Status w4a16_dequantize(const uint32_t* packed_weight, const uint32_t* packed_scales, int n, int k, int group_size,
                        uint16_t* w, int64_t w_stride, cudaStream_t stream, const uint32_t* packed_zeros = nullptr);

}  // namespace crosspoint::cuda
