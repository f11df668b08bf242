// The GEMM an engine calls per linear layer and precision at decode and prefill. Weights
// [N, K] row-major; fp16 output [M, N]. Rows -> kernel (measurements in docs/cuda.md; the
// hand GEMV only where it beat cuBLASLt):
//   fp16, bf16  M <= kFp16GemvMaxRows (1)
//                                      fp16_gemv on CUDA cores (bf16: its bf16 instantiation);
//                                      above, cuBLASLt (its tensor-core GEMM streamed the 7B
//                                      linears faster than a hand one at 2..16)
//   fp8    on Hopper (cutlass_fp8_available), where cutlass_fp8_tile_for names a kernel (every
//          linear to 64 rows, most to 128, the narrow ones to 256)
//                                      fp8_quantize_per_token + cutlass_fp8_gemm (TMA + wgmma,
//                                      operands swapped): faster than the fused GEMV even at
//                                      M = 1, than cuBLASLt there
//          elsewhere, M <= kFp8FusedMaxRows (2)
//                                      fp8_gemv_from_fp16: the per-token quantisation inside the GEMV
//          M <= fp8_gemv_max_rows()    fp8_quantize_per_token + fp8_gemv: 16 rows on tensor cores
//                                      (sm_89+), 2 on CUDA cores
//          above                       fp8_quantize_per_token + cuBLASLt
//   int8   sm_90a, on the tile cutlass_int8_tile_for picks at every row count (FP8's where it
//          names one; else the cooperative 128x128 to 1,023 rows, 128x256 from 1,024)
//                                      int8_quantize_per_token (or _static) + cutlass_int8_gemm
//                                      (the FP8 kernels' tiles with int8 operands)
//          elsewhere                   the quantisation + cuBLASLt's int8 GEMM and the scale
//                                      epilogue (int8_gemm_cublaslt)
//   fp8 block (128 x 128 weight scales), M rounded up to 4 (M4) <= kCutlassFp8BlockMaxRows (128) on sm_90a
//                                      fp8_quantize_per_token_group + cutlass_fp8_block_gemm on the
//                                      tile cutlass_fp8_block_tile_for picks
//          above                       fp8_quantize_per_token_group + cuBLASLt's block-scaled GEMM
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "common/status.h"
#include "kernels/cuda/cublaslt_gemm.h"
#include "kernels/cuda/gemv.h"

namespace crosspoint::cuda {

inline constexpr int kFp16GemvMaxRows = 1;
inline constexpr int kFp8GemvMaxRows = kMmaGemvMaxRows;
static_assert(kFp8GemvMaxRows <= kMmaGemvMaxRows, "fp8_gemv takes at most kMmaGemvMaxRows rows");
inline constexpr int kFp8CudaCoreGemvMaxRows = 2;
// The fused GEMV while its shared e4m3 copy of x (M * K bytes) stays this small, so that two
// blocks fit on an SM.
inline constexpr int kFp8FusedMaxRows = 2;
inline constexpr int64_t kFp8FusedMaxSharedBytes = 64 * 1024;

// The fp8 GEMV's row limit on this device (kFp8GemvMaxRows with tensor cores, else
// kFp8CudaCoreGemvMaxRows).
int fp8_gemv_max_rows();

//   x [M, K] fp16, w [N, K] fp16, y [M, N] fp16 (row strides in elements); all bf16 with dtype kBF16.
Status fp16_linear(CublasLtContext& ctx, const uint16_t* x, int64_t x_stride, const uint16_t* w, int64_t w_stride,
                   uint16_t* y, int64_t y_stride, int m, int n, int k, cudaStream_t stream, DType dtype = DType::kF16);

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

// Whether fp8_linear_from_fp16 takes the fused kernel for these sizes (host only; never where
// CUTLASS takes the rows).
bool fp8_linear_fuses_quantisation(const uint16_t* x, int64_t x_stride, int64_t w_stride, int m, int k);

// W8A8-INT8 from fp16 activations x [M, K]: quantised per token (or with the device f32
// static_scale when it is not null) into xq [M, K] int8 and x_scale [M], then cutlass_int8_gemm
// or int8_gemm_cublaslt (as the table above says; the same bits either way) with wq [N, K] int8,
// w_scale [N] f32 and, for cuBLASLt, scratch [M, N] int32.
Status int8_linear_from_fp16(CublasLtContext& ctx, const uint16_t* x, int64_t x_stride, int8_t* xq, int64_t xq_stride,
                             float* x_scale, const float* static_scale, const int8_t* wq, int64_t w_stride,
                             const float* w_scale, uint16_t* y, int64_t y_stride, int m, int n, int k, int32_t* scratch,
                             cudaStream_t stream);

// Block-wise FP8 from fp16 activations x [M, K] (row stride K): quantised per token and group of
// 128 into xq and x_scale [K / 128, M4], then fp8_block_gemm_cublaslt with wq [N, K] and its block
// scales (layout in cublaslt_gemm.h) on M4 = fp8_block_padded_rows(M) rows, as cuBLASLt's token
// count must be a multiple of 4: xq and y need M4 rows (y [M4, N] fp16; rows M .. M4 - 1 of y
// get values of no meaning). With w_scale_m64 (the same scales in fp8_block_scales_m64's layout),
// M4 <= kCutlassFp8BlockMaxRows runs cutlass_fp8_block_gemm instead, where the build has it.
inline int fp8_block_padded_rows(int m) { return (m + 3) / 4 * 4; }
Status fp8_block_linear_from_fp16(CublasLtContext& ctx, const uint16_t* x, uint8_t* xq, float* x_scale,
                                  const uint8_t* wq, const float* w_scale, uint16_t* y, int m, int n, int k,
                                  cudaStream_t stream, const float* w_scale_m64 = nullptr);

}  // namespace crosspoint::cuda
