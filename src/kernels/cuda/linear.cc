#include "kernels/cuda/linear.h"

#include <optional>

#include "kernels/cuda/cutlass_fp8_block_gemm.h"
#include "kernels/cuda/cutlass_fp8_gemm.h"
#include "kernels/cuda/device_info.h"
#include "kernels/cuda/fp8_block_quant.h"
#include "kernels/cuda/fp8_quant.h"
#include "kernels/cuda/gemv.h"
#include "kernels/cuda/int8_quant.h"

namespace crosspoint::cuda {
namespace {

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// The CUTLASS kernel that takes the call: the one cutlass_fp8_tile_for (cutlass_int8_tile_for)
// picks for this shape, where its TMA layout rules hold (else the next kernel does).
std::optional<CutlassFp8Tile> cutlass_tile(const uint8_t* xq, int64_t xq_stride, const uint8_t* wq, int64_t w_stride,
                                           const uint16_t* y, int64_t y_stride, int m, int n, int k, bool int8) {
  const bool fits = cutlass_fp8_available() && k % 16 == 0 && xq_stride % 16 == 0 && w_stride % 16 == 0 && n % 8 == 0 &&
                    y_stride % 8 == 0 && aligned16(xq) && aligned16(wq) && aligned16(y);
  if (!fits) return std::nullopt;
  const int sms = cuda_device_info().num_sms;
  return int8 ? cutlass_int8_tile_for(m, n, sms) : cutlass_fp8_tile_for(m, n, sms);
}

}  // namespace

Status fp16_linear(CublasLtContext& ctx, const uint16_t* x, int64_t x_stride, const uint16_t* w, int64_t w_stride,
                   uint16_t* y, int64_t y_stride, int m, int n, int k, cudaStream_t stream, DType dtype) {
  const bool gemv_fits = (dtype == DType::kF16 || dtype == DType::kBF16) && m >= 1 && m <= kFp16GemvMaxRows &&
                         k % 8 == 0 && x_stride % 8 == 0 && w_stride % 8 == 0;
  if (gemv_fits) return fp16_gemv(x, x_stride, w, w_stride, y, y_stride, m, n, k, stream, 0, dtype);
  return fp16_gemm_cublaslt(ctx, x, x_stride, w, w_stride, y, y_stride, m, n, k, stream, dtype);
}

Status fp8_linear(CublasLtContext& ctx, const uint8_t* xq, int64_t xq_stride, const float* x_scale, const uint8_t* wq,
                  int64_t w_stride, const float* w_scale, uint16_t* y, int64_t y_stride, int m, int n, int k,
                  float* scratch, cudaStream_t stream) {
  if (const std::optional<CutlassFp8Tile> tile =
          cutlass_tile(xq, xq_stride, wq, w_stride, y, y_stride, m, n, k, /*int8=*/false))
    return cutlass_fp8_gemm(*tile, xq, xq_stride, x_scale, wq, w_stride, w_scale, y, y_stride, m, n, k, stream);
  const bool gemv_fits = m >= 1 && m <= fp8_gemv_max_rows() && k % 16 == 0 && xq_stride % 16 == 0 && w_stride % 16 == 0;
  if (gemv_fits) return fp8_gemv(xq, xq_stride, x_scale, wq, w_stride, w_scale, y, y_stride, m, n, k, stream);
  return fp8_gemm_cublaslt(ctx, xq, xq_stride, x_scale, wq, w_stride, w_scale, y, y_stride, m, n, k, scratch, stream);
}

int fp8_gemv_max_rows() { return fp8_gemv_on_tensor_cores() ? kFp8GemvMaxRows : kFp8CudaCoreGemvMaxRows; }

bool fp8_linear_fuses_quantisation(const uint16_t* x, int64_t x_stride, int64_t w_stride, int m, int k) {
  // On Hopper, CUTLASS takes every linear of so few rows.
  return !cutlass_fp8_available() && m >= 1 && m <= kFp8FusedMaxRows && k % 16 == 0 && x_stride % 8 == 0 &&
         w_stride % 16 == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0 &&
         static_cast<int64_t>(m) * k <= kFp8FusedMaxSharedBytes;
}

Status fp8_linear_from_fp16(CublasLtContext& ctx, const uint16_t* x, int64_t x_stride, uint8_t* xq, int64_t xq_stride,
                            float* x_scale, const uint8_t* wq, int64_t w_stride, const float* w_scale, uint16_t* y,
                            int64_t y_stride, int m, int n, int k, float* scratch, cudaStream_t stream) {
  if (fp8_linear_fuses_quantisation(x, x_stride, w_stride, m, k)) {
    return fp8_gemv_from_fp16(x, x_stride, wq, w_stride, w_scale, y, y_stride, m, n, k, stream);
  }
  CROSSPOINT_RETURN_IF_ERROR(fp8_quantize_per_token(x, x_stride, xq, xq_stride, x_scale, m, k, stream));
  return fp8_linear(ctx, xq, xq_stride, x_scale, wq, w_stride, w_scale, y, y_stride, m, n, k, scratch, stream);
}

Status int8_linear_from_fp16(CublasLtContext& ctx, const uint16_t* x, int64_t x_stride, int8_t* xq, int64_t xq_stride,
                             float* x_scale, const float* static_scale, const int8_t* wq, int64_t w_stride,
                             const float* w_scale, uint16_t* y, int64_t y_stride, int m, int n, int k, int32_t* scratch,
                             cudaStream_t stream) {
  CROSSPOINT_RETURN_IF_ERROR(static_scale != nullptr
                                 ? int8_quantize_static(x, x_stride, xq, xq_stride, x_scale, static_scale, m, k, stream)
                                 : int8_quantize_per_token(x, x_stride, xq, xq_stride, x_scale, m, k, stream));
  const auto* xq_bytes = reinterpret_cast<const uint8_t*>(xq);
  const auto* wq_bytes = reinterpret_cast<const uint8_t*>(wq);
  if (ctx.int8_cutlass()) {
    if (const std::optional<CutlassFp8Tile> tile =
            cutlass_tile(xq_bytes, xq_stride, wq_bytes, w_stride, y, y_stride, m, n, k, /*int8=*/true))
      return cutlass_int8_gemm(*tile, xq, xq_stride, x_scale, wq, w_stride, w_scale, y, y_stride, m, n, k, stream);
  }
  return int8_gemm_cublaslt(ctx, xq, xq_stride, x_scale, wq, w_stride, w_scale, y, y_stride, m, n, k, scratch, stream);
}

Status fp8_block_linear_from_fp16(CublasLtContext& ctx, const uint16_t* x, uint8_t* xq, float* x_scale,
                                  const uint8_t* wq, const float* w_scale, uint16_t* y, int m, int n, int k,
                                  cudaStream_t stream, const float* w_scale_m64) {
  const int padded = fp8_block_padded_rows(m);
  CROSSPOINT_RETURN_IF_ERROR(fp8_quantize_per_token_group(x, k, xq, k, x_scale, padded, m, k, stream));
  if (w_scale_m64 != nullptr && padded <= kCutlassFp8BlockMaxRows && n % 8 == 0) {
    CutlassFp8BlockArgs a;
    a.xq = xq;
    a.x_scale = x_scale;
    a.wq = wq;
    a.w_scale_m64 = w_scale_m64;
    a.y = y;
    a.m = padded;
    a.n = n;
    a.k = k;
    const Status st = cutlass_fp8_block_gemm(a, stream);
    if (st.code() != StatusCode::kUnsupported) return st;  // a build without sm_90a kernels: cuBLASLt's
  }
  return fp8_block_gemm_cublaslt(ctx, xq, x_scale, wq, w_scale, y, padded, n, k, stream);
}

}  // namespace crosspoint::cuda
