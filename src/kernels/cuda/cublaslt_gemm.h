// GEMMs through cuBLASLt for weights stored [N, K] row-major (HF nn.Linear layout):
//   fp16:  y[M, N] = x[M, K] · w[N, K]^T
//   fp8:   y[M, N] = x_scale[m] * w_scale[n] * (xq[M, K] · wq[N, K]^T)   (W8A8 e4m3)
//   int8:  y[M, N] = (float(xq[M, K] · wq[N, K]^T) * x_scale[m]) * w_scale[n]   (W8A8-INT8)
//   fp8 block: y[m, n] = sum_g x_scale[g, m] * w_scale[n / 128, g] * (xq · wq^T over group g)
// In cuBLAS's column-major terms both compute D[N, M] = op(A)=W^T-as-stored · B=X ("TN"),
// fp32 accumulation (int32 for int8), fp16 output.
//
// FP8 scales: on sm_90 with cuBLAS >= 12.9 the per-channel x per-token scales go into the
// GEMM itself (CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F on A and B). Where cuBLASLt finds
// no algorithm for that, the GEMM runs with unit scales into an fp32 scratch [M, N] and a
// small epilogue kernel applies x_scale[m] * w_scale[n] (Fp8ScalePath::kEpilogue).
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <map>
#include <memory>
#include <tuple>

#include "common/dtype.h"
#include "common/status.h"

namespace crosspoint::cuda {

enum class Fp8ScalePath { kOuterVector, kEpilogue };

// Owns the cuBLASLt handle, its workspace and the per-shape plans (descriptors and the
// algorithm the heuristic chose; for int8, the fastest of its candidates, timed once), so
// repeated calls and CUDA-graph capture do no host searching. Not thread-safe: one context per
// stream/thread.
class CublasLtContext {
 public:
  static Result<std::unique_ptr<CublasLtContext>> create(size_t workspace_bytes = 32u << 20);
  ~CublasLtContext();
  CublasLtContext(const CublasLtContext&) = delete;
  CublasLtContext& operator=(const CublasLtContext&) = delete;

  struct Plan;
  // kind 0 fp16, 1 fp8 with outer-vector scales, 2 fp8 unit scales into fp32, 3 int8 into int32,
  // 4 fp8 with block scales, 5 bf16.
  using PlanKey = std::tuple<int, int, int, int, int64_t, int64_t, int64_t>;
  Result<Plan*> plan(const PlanKey& key);

  // Whether int8_linear_from_fp16 may hand its rows to CUTLASS (on by default; off keeps every
  // shape on cuBLASLt, for benchmarks that show both).
  void set_int8_cutlass(bool on) { int8_cutlass_ = on; }
  bool int8_cutlass() const { return int8_cutlass_; }

  cublasLtHandle_t handle() const { return handle_; }
  void* workspace() const { return workspace_; }
  size_t workspace_bytes() const { return workspace_bytes_; }

 private:
  CublasLtContext() = default;
  cublasLtHandle_t handle_ = nullptr;
  void* workspace_ = nullptr;  // device, workspace_bytes_
  size_t workspace_bytes_ = 0;
  bool int8_cutlass_ = true;
  std::map<PlanKey, std::unique_ptr<Plan>> plans_;
};

//   x [M, K] fp16 (row stride x_stride), w [N, K] fp16 (row stride w_stride),
//   y [M, N] fp16 (row stride y_stride); all three bf16 with dtype kBF16 (fp32 accumulation either way).
Status fp16_gemm_cublaslt(CublasLtContext& ctx, const uint16_t* x, int64_t x_stride, const uint16_t* w,
                          int64_t w_stride, uint16_t* y, int64_t y_stride, int m, int n, int k, cudaStream_t stream,
                          DType dtype = DType::kF16);

// Which scale path fp8_gemm_cublaslt takes for this shape (asks cuBLASLt once, cached).
Result<Fp8ScalePath> fp8_scale_path(CublasLtContext& ctx, int m, int n, int k, int64_t xq_stride, int64_t w_stride,
                                    int64_t y_stride);

// Bytes of fp32 scratch the epilogue path needs ([M, N] fp32); 0 is fine for kOuterVector.
inline size_t fp8_gemm_scratch_bytes(int m, int n) { return static_cast<size_t>(m) * n * 4; }

//   xq [M, K] e4m3 (row stride xq_stride bytes), x_scale [M] fp32 (per token),
//   wq [N, K] e4m3 (row stride w_stride bytes), w_scale [N] fp32 (per channel),
//   y [M, N] fp16; scratch: fp8_gemm_scratch_bytes(M, N) device bytes or nullptr when
//   fp8_scale_path() says kOuterVector. K and the strides must be multiples of 16.
Status fp8_gemm_cublaslt(CublasLtContext& ctx, const uint8_t* xq, int64_t xq_stride, const float* x_scale,
                         const uint8_t* wq, int64_t w_stride, const float* w_scale, uint16_t* y, int64_t y_stride,
                         int m, int n, int k, float* scratch, cudaStream_t stream);

// Bytes of the int32 scratch int8_gemm_cublaslt needs ([M, N] int32).
inline size_t int8_gemm_scratch_bytes(int m, int n) { return static_cast<size_t>(m) * n * 4; }

// W8A8-INT8: cuBLASLt's int8 tensor-core GEMM (exact int32 sums, sm_75 and later) into scratch
// [M, N] int32, then an epilogue kernel y = fp16((float(sum) * x_scale[m]) * w_scale[n]), the
// order kernels/int8.h specifies, so outputs equal the host reference's bit for bit.
//   xq [M, K] int8 (row stride xq_stride bytes), x_scale [M] fp32 (per token),
//   wq [N, K] int8 (row stride w_stride bytes), w_scale [N] fp32 (per channel), y [M, N] fp16.
// N, K and the strides must be multiples of 4 (cuBLASLt's rule for int8 in the "TN" layout).
// The first call of a shape outside a graph capture times the heuristic's candidate algorithms
// on these operands (synchronising the stream) and keeps the fastest; the sums are exact, so the
// choice never changes a bit.
Status int8_gemm_cublaslt(CublasLtContext& ctx, const int8_t* xq, int64_t xq_stride, const float* x_scale,
                          const int8_t* wq, int64_t w_stride, const float* w_scale, uint16_t* y, int64_t y_stride,
                          int m, int n, int k, int32_t* scratch, cudaStream_t stream);
// Whether cuBLASLt has an int8 algorithm for these sizes (dense strides) on this GPU (asks once, cached).
bool int8_gemm_available(CublasLtContext& ctx, int m, int n, int k);

// Block-wise FP8 (Qwen3 / DeepSeek "-FP8", kernels/fp8_block.h) through cuBLASLt's block-scaled
// FP8 GEMM (compute capability 9.0, cuBLAS 12.9 and later): 128 x 128 weight blocks, activations
// quantised per token and group of 128 (fp8_block_quant.h). Dense, row strides = K (xq, wq) and N (y):
//   xq [M, K] e4m3, x_scale [K / 128, M] fp32 (group-major: one group's tokens contiguous),
//   wq [N, K] e4m3, w_scale [ceil(N / 128), fp8_block_weight_scale_row(K)] fp32 (a row per block
//   of 128 channels, its K blocks contiguous, the row padded to 16 bytes as cuBLASLt wants),
//   y [M, N] fp16. K a multiple of 128, N of 16, M of 4 (cuBLAS's rule for block scales).
inline int64_t fp8_block_weight_scale_row(int64_t k) { return (k / 128 + 3) / 4 * 4; }
Status fp8_block_gemm_cublaslt(CublasLtContext& ctx, const uint8_t* xq, const float* x_scale, const uint8_t* wq,
                               const float* w_scale, uint16_t* y, int m, int n, int k, cudaStream_t stream);
// Whether cuBLASLt has a block-scaled FP8 algorithm for these sizes on this GPU (asks once, cached).
bool fp8_block_gemm_available(CublasLtContext& ctx, int m, int n, int k);

}  // namespace crosspoint::cuda
