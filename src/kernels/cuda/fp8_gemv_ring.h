// Internal to gemv.cu and fp8_gemv_ring.cu: the fp8 ring kernel's entry points, called by
// fp8_gemv / fp8_gemv_from_fp16 (gemv.h) with GemvOptions::fp8_ring once they have checked the
// arguments and the device (e4m3 MMA). Not a public API.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "common/status.h"

namespace crosspoint::cuda::fp8_ring_internal {

// fp8_gemv's product (1 <= m <= kMmaGemvMaxRows). force_splits: GemvOptions::k_splits.
Status fp8_ring_gemv(const uint8_t* xq, int64_t xq_stride, const float* x_scale, const uint8_t* wq, int64_t w_stride,
                     const float* w_scale, uint16_t* y, int64_t y_stride, int m, int n, int k, int force_splits,
                     cudaStream_t stream);

// fp8_gemv_from_fp16's product (1 <= m <= kGemvMaxRows), optional copies as there.
Status fp8_ring_gemv_from_fp16(const uint16_t* x, int64_t x_stride, const uint8_t* wq, int64_t w_stride,
                               const float* w_scale, uint16_t* y, int64_t y_stride, int m, int n, int k, uint8_t* xq_out,
                               int64_t xq_out_stride, float* x_scale_out, int force_splits, cudaStream_t stream);

}  // namespace crosspoint::cuda::fp8_ring_internal
