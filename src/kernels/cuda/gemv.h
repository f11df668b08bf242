// Hand-written small-batch GEMV for weights stored [N, K] row-major (HF nn.Linear layout),
// for decode steps with few tokens, where the weight read is the whole cost:
//   fp16 (or bf16):  y[m, n] = sum_k x[m, k] * w[n, k]
//   fp8:   y[m, n] = x_scale[m] * w_scale[n] * sum_k xq[m, k] * wq[n, k]   (W8A8, e4m3)
//   fp8 from fp16: the same, with xq / x_scale computed inside the kernel from fp16 x
//          exactly as fp8_quantize_per_token does (one launch instead of two)
// fp32 accumulation, fp16 output. A warp owns a few output columns and one slice of K; the
// k_splits warps sharing the columns add their partial sums in shared memory. Weights are
// streamed with 16-byte loads, >= 4 per lane in flight; activations come from L1/L2 (or
// shared memory when quantised in the kernel). Supports 1 <= m <= kGemvMaxRows.
// fp16 runs on CUDA cores (2 columns per warp). fp8 runs on tensor cores where the GPU has
// e4m3 MMA (sm_89+: m16n8k32, 16 columns per warp, the activation rows as the MMA's 8
// columns, so m <= 8 costs as m = 1), else on CUDA cores (4 columns per warp): converting
// e4m3 to fp32 for CUDA-core FMAs costs more instructions per byte than HBM leaves time for.
// On tensor cores a second MMA per weight fragment serves activation rows 8 .. 15, so m <= 16
// streams the weights once (kMmaGemvMaxRows).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "common/dtype.h"
#include "common/status.h"

namespace crosspoint::cuda {

// Rows the CUDA-core kernels (fp16_gemv, fp8 without e4m3 MMA) and the fused-quantisation
// kernel take.
inline constexpr int kGemvMaxRows = 8;
// Rows the tensor-core kernel takes (fp8_gemv on sm_89+): two token tiles of the MMA's 8
// columns.
inline constexpr int kMmaGemvMaxRows = 16;

// How one GEMV launch divides its work (host only; plan_gemv picks it, tests check it).
struct GemvPlan {
  int cols_per_warp = 0;     // output columns one warp accumulates (fp16: 2, fp8: 4)
  int k_splits = 0;          // warps that share those columns, each over 1/k_splits of K (1, 2, 4, 8)
  int chunks_per_split = 0;  // 16-byte weight pieces per row slice (the last slice may be shorter)
  int cols_per_block = 0;    // 8 warps / k_splits column groups of cols_per_warp
  int num_blocks = 0;        // ceil(n / cols_per_block)
};

// CUDA-core kernels: splits K (in powers of two up to 8) until there are about num_sms x 24
// warps, keeping at least 32 chunks (one 16-byte load per lane and column) in every slice.
// force_k_splits > 0 takes that split instead (benchmarks: 1 is one warp per whole row).
// fp8 weights have 16 values per chunk, fp16 8.
GemvPlan plan_gemv(bool fp8_weights, int n, int k, int num_sms, int force_k_splits = 0);

// fp8 tensor-core kernel: 16 columns per warp, K in 64-byte steps (chunks_per_split is a
// multiple of 4); splits like plan_gemv while every slice keeps >= 4 steps.
GemvPlan plan_fp8_mma_gemv(int n, int k, int num_sms, int force_k_splits = 0);

// Whether fp8_gemv / fp8_gemv_from_fp16 run on tensor cores on the current device (sm_89+).
bool fp8_gemv_on_tensor_cores();

// Choices a test or benchmark may force on an fp8 GEMV; the defaults are what engines want.
struct GemvOptions {
  int k_splits = 0;                // 0: planned; else 1, 2, 4 or 8 warps per column group
  bool fp8_on_cuda_cores = false;  // the CUDA-core kernel even on a GPU with e4m3 MMA
};

//   x [M, K] fp16 (row stride x_stride), w [N, K] fp16 (row stride w_stride),
//   y [M, N] fp16 (row stride y_stride). K % 8 == 0; strides multiples of 8 elements.
//   k_splits: 0 = plan_gemv's choice, else 1, 2, 4 or 8.
//   dtype kBF16: x, w and y are bf16 instead (the same kernel, bf16 conversions).
Status fp16_gemv(const uint16_t* x, int64_t x_stride, const uint16_t* w, int64_t w_stride, uint16_t* y,
                 int64_t y_stride, int m, int n, int k, cudaStream_t stream, int k_splits = 0,
                 DType dtype = DType::kF16);

//   xq [M, K] e4m3 (row stride xq_stride bytes), x_scale [M] fp32,
//   wq [N, K] e4m3 (row stride w_stride bytes), w_scale [N] fp32,
//   y [M, N] fp16. K % 16 == 0; strides multiples of 16 bytes. m <= kMmaGemvMaxRows on
//   tensor cores (fp8_gemv_on_tensor_cores() and not options.fp8_on_cuda_cores), else
//   m <= kGemvMaxRows.
Status fp8_gemv(const uint8_t* xq, int64_t xq_stride, const float* x_scale, const uint8_t* wq, int64_t w_stride,
                const float* w_scale, uint16_t* y, int64_t y_stride, int m, int n, int k, cudaStream_t stream,
                GemvOptions options = {});

// W8A8 with the per-token activation quantisation fused in. Every block finds the row amax of
// x itself (x is small and L2-resident; its first weight loads are issued before, so HBM
// latency overlaps it), derives scale and e4m3 codes with fp8_quant.h's formula bit for bit,
// and keeps the codes in shared memory (m * k bytes) for its dot products. With the same
// options the result equals fp8_quantize_per_token + fp8_gemv bit for bit.
//   x [M, K] fp16 (row stride x_stride elements, 16-byte aligned), wq [N, K] e4m3,
//   w_scale [N] fp32, y [M, N] fp16. K % 16 == 0; strides multiples of 16 bytes / 8 elements.
//   xq_out [M, K] e4m3 (row stride xq_out_stride) and x_scale_out [M] fp32: optional copies
//   of the quantised activations (nullptr: not written; the engine needs none).
// Errors: m outside [1, kGemvMaxRows], bad k or strides, m * k bytes over the device's
// shared memory per block.
Status fp8_gemv_from_fp16(const uint16_t* x, int64_t x_stride, const uint8_t* wq, int64_t w_stride,
                          const float* w_scale, uint16_t* y, int64_t y_stride, int m, int n, int k, cudaStream_t stream,
                          uint8_t* xq_out = nullptr, int64_t xq_out_stride = 0, float* x_scale_out = nullptr,
                          GemvOptions options = {});

}  // namespace crosspoint::cuda
