// The GEMM an engine calls per linear layer and precision at decode and prefill: picks the
// kernel by batch rows from the H200 measurements in docs/cuda.md (the hand GEMV only where it
// beat cuBLASLt). Weights [N, K] row-major; fp16 output [M, N].
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "common/status.h"
#include "kernels/cuda/cublaslt_gemm.h"
#include "kernels/cuda/gemv.h"

namespace crosspoint::cuda {

inline constexpr int kFp16GemvMaxRows = 1;  // fp16: GEMV at M = 1, cuBLASLt above
// fp16 at kFp16GemvMaxRows < M <= kFp16MmaGemvMaxRows: the tensor-core GEMV (fp16_mma_gemv).
// Off (1): on the H200 cuBLASLt streamed the 7B decode-step linears at ~80 % of the bandwidth
// at every M = 2..16 (3.60-3.64 ms), the tensor-core GEMV at 75-62 % (3.87-4.68 ms; bench_gemm,
// 2026-11-30). At most kMmaGemvMaxRows (16).
inline constexpr int kFp16MmaGemvMaxRows = 1;
static_assert(kFp16MmaGemvMaxRows <= kMmaGemvMaxRows, "fp16_mma_gemv takes at most kMmaGemvMaxRows rows");
// fp8: GEMV at M <= 16 where it runs on tensor cores (its cost is flat to M = 8; measured on
// the H200: 7B decode-step linears 3.07 ms at M = 4 against cuBLASLt's 4.40; M = 9..16
// streams the weights once with two MMAs per fragment), at M <= 2 on CUDA cores (the first
// pass's measurements); cuBLASLt above.
inline constexpr int kFp8GemvMaxRows = kMmaGemvMaxRows;
static_assert(kFp8GemvMaxRows <= kMmaGemvMaxRows, "fp8_gemv takes at most kMmaGemvMaxRows rows");
inline constexpr int kFp8CudaCoreGemvMaxRows = 2;
// fp8 from fp16: the fused GEMV at M <= 2 while its shared e4m3 copy of x (M * K bytes)
// stays this small, so that two blocks fit on an SM.
inline constexpr int kFp8FusedMaxRows = 2;
inline constexpr int64_t kFp8FusedMaxSharedBytes = 64 * 1024;

// The fp8 GEMV's row limit on this device (kFp8GemvMaxRows with tensor cores, else
// kFp8CudaCoreGemvMaxRows).
int fp8_gemv_max_rows();

//   x [M, K] fp16, w [N, K] fp16, y [M, N] fp16 (row strides in elements).
Status fp16_linear(CublasLtContext& ctx, const uint16_t* x, int64_t x_stride, const uint16_t* w, int64_t w_stride,
                   uint16_t* y, int64_t y_stride, int m, int n, int k, cudaStream_t stream);

// W8A8 after fp8_quantize_per_token: xq [M, K] e4m3 with x_scale [M], wq [N, K] e4m3 with
// w_scale [N]; scratch as fp8_gemm_cublaslt wants (nullptr when the outer-vector path holds).
Status fp8_linear(CublasLtContext& ctx, const uint8_t* xq, int64_t xq_stride, const float* x_scale, const uint8_t* wq,
                  int64_t w_stride, const float* w_scale, uint16_t* y, int64_t y_stride, int m, int n, int k,
                  float* scratch, cudaStream_t stream);

// W8A8 from fp16 activations x [M, K] (row stride x_stride elements), what an engine calls:
// at small M one fused kernel (fp8_gemv_from_fp16: per-token quantisation inside the GEMV,
// xq and x_scale untouched); otherwise fp8_quantize_per_token into xq [M, K] e4m3 (row
// stride xq_stride bytes) and x_scale [M] f32, then fp8_linear. wq [N, K] e4m3 with
// w_scale [N] f32, y [M, N] fp16; scratch as fp8_linear.
Status fp8_linear_from_fp16(CublasLtContext& ctx, const uint16_t* x, int64_t x_stride, uint8_t* xq, int64_t xq_stride,
                            float* x_scale, const uint8_t* wq, int64_t w_stride, const float* w_scale, uint16_t* y,
                            int64_t y_stride, int m, int n, int k, float* scratch, cudaStream_t stream);

// Whether fp8_linear_from_fp16 takes the fused kernel for these sizes (host only).
bool fp8_linear_fuses_quantisation(const uint16_t* x, int64_t x_stride, int64_t w_stride, int m, int k);

}  // namespace crosspoint::cuda
