// Small-batch GEMV kernels (fp16 and fp8 weights). See gemv.h.
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <string>

#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/gemv.h"

namespace crosspoint::cuda {
namespace {

constexpr int kWarpsPerBlock = 8;
constexpr int kColsPerWarp = 2;   // output columns (weight rows) per warp
constexpr int kLoadsInFlight = 4; // 16-byte chunks per weight row a lane loads before using them

__device__ __forceinline__ float2 half2_bits_to_float2(uint32_t bits) {
  return __half22float2(*reinterpret_cast<const half2*>(&bits));
}

// Two e4m3 values (low byte first) -> two floats, exact.
__device__ __forceinline__ float2 fp8x2_to_float2(uint16_t pair) {
  const __half2_raw raw = __nv_cvt_fp8x2_to_halfraw2(pair, __NV_E4M3);
  return __half22float2(*reinterpret_cast<const half2*>(&raw));
}

// acc += dot(16 bytes of weights, 16 bytes of activations) in fp32.
template <bool kFp8>
__device__ __forceinline__ float dot_chunk(uint4 w, uint4 x, float acc) {
  const uint32_t wv[4] = {w.x, w.y, w.z, w.w};
  const uint32_t xv[4] = {x.x, x.y, x.z, x.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    if constexpr (kFp8) {
      const float2 w0 = fp8x2_to_float2(static_cast<uint16_t>(wv[i] & 0xFFFFu));
      const float2 w1 = fp8x2_to_float2(static_cast<uint16_t>(wv[i] >> 16));
      const float2 x0 = fp8x2_to_float2(static_cast<uint16_t>(xv[i] & 0xFFFFu));
      const float2 x1 = fp8x2_to_float2(static_cast<uint16_t>(xv[i] >> 16));
      acc = fmaf(w0.x, x0.x, acc);
      acc = fmaf(w0.y, x0.y, acc);
      acc = fmaf(w1.x, x1.x, acc);
      acc = fmaf(w1.y, x1.y, acc);
    } else {
      const float2 wf = half2_bits_to_float2(wv[i]);
      const float2 xf = half2_bits_to_float2(xv[i]);
      acc = fmaf(wf.x, xf.x, acc);
      acc = fmaf(wf.y, xf.y, acc);
    }
  }
  return acc;
}

// x / w rows are byte pointers; a chunk is 16 bytes (8 fp16 or 16 e4m3 values).
template <bool kFp8, int kRows>
__global__ void __launch_bounds__(kWarpsPerBlock * 32)
    gemv_kernel(const uint8_t* __restrict__ x, int64_t x_stride_bytes, const float* __restrict__ x_scale,
                const uint8_t* __restrict__ w, int64_t w_stride_bytes, const float* __restrict__ w_scale,
                uint16_t* __restrict__ y, int64_t y_stride, int m, int n, int num_chunks) {
  const int lane = threadIdx.x % 32;
  const int col0 = (blockIdx.x * kWarpsPerBlock + threadIdx.x / 32) * kColsPerWarp;
  if (col0 >= n) return;
  const uint4* w_rows[kColsPerWarp];
#pragma unroll
  for (int c = 0; c < kColsPerWarp; ++c) {
    w_rows[c] = reinterpret_cast<const uint4*>(w + min(col0 + c, n - 1) * w_stride_bytes);
  }
  float acc[kRows][kColsPerWarp] = {};
  for (int base = lane; base < num_chunks; base += 32 * kLoadsInFlight) {
    uint4 wv[kColsPerWarp][kLoadsInFlight];
#pragma unroll
    for (int i = 0; i < kLoadsInFlight; ++i) {
      const int chunk = base + i * 32;
#pragma unroll
      for (int c = 0; c < kColsPerWarp; ++c) {
        wv[c][i] = chunk < num_chunks ? __ldcs(w_rows[c] + chunk) : make_uint4(0, 0, 0, 0);
      }
    }
#pragma unroll
    for (int i = 0; i < kLoadsInFlight; ++i) {
      const int chunk = base + i * 32;
      if (chunk >= num_chunks) break;
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
        if (r >= m) break;
        const uint4 xv = __ldg(reinterpret_cast<const uint4*>(x + r * x_stride_bytes) + chunk);
#pragma unroll
        for (int c = 0; c < kColsPerWarp; ++c) acc[r][c] = dot_chunk<kFp8>(wv[c][i], xv, acc[r][c]);
      }
    }
  }
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
#pragma unroll
    for (int c = 0; c < kColsPerWarp; ++c) {
      float v = acc[r][c];
#pragma unroll
      for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
      acc[r][c] = v;
    }
  }
  if (lane != 0) return;
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    if (r >= m) break;
#pragma unroll
    for (int c = 0; c < kColsPerWarp; ++c) {
      const int col = col0 + c;
      if (col >= n) break;
      float v = acc[r][c];
      if constexpr (kFp8) v *= x_scale[r] * w_scale[col];
      y[r * y_stride + col] = __half_as_ushort(__float2half_rn(v));
    }
  }
}

template <bool kFp8>
Status launch_gemv(const uint8_t* x, int64_t x_stride_bytes, const float* x_scale, const uint8_t* w,
                   int64_t w_stride_bytes, const float* w_scale, uint16_t* y, int64_t y_stride, int m,
                   int n, int num_chunks, cudaStream_t stream) {
  const int cols_per_block = kWarpsPerBlock * kColsPerWarp;
  const dim3 grid((n + cols_per_block - 1) / cols_per_block);
  const dim3 block(kWarpsPerBlock * 32);
  if (m == 1) {
    gemv_kernel<kFp8, 1><<<grid, block, 0, stream>>>(x, x_stride_bytes, x_scale, w, w_stride_bytes, w_scale, y, y_stride, m, n, num_chunks);
  } else if (m == 2) {
    gemv_kernel<kFp8, 2><<<grid, block, 0, stream>>>(x, x_stride_bytes, x_scale, w, w_stride_bytes, w_scale, y, y_stride, m, n, num_chunks);
  } else if (m <= 4) {
    gemv_kernel<kFp8, 4><<<grid, block, 0, stream>>>(x, x_stride_bytes, x_scale, w, w_stride_bytes, w_scale, y, y_stride, m, n, num_chunks);
  } else {
    gemv_kernel<kFp8, 8><<<grid, block, 0, stream>>>(x, x_stride_bytes, x_scale, w, w_stride_bytes, w_scale, y, y_stride, m, n, num_chunks);
  }
  return last_launch_status(kFp8 ? "fp8_gemv launch" : "fp16_gemv launch");
}

Status check_shape(const char* op, int m, int n, int k, int k_multiple) {
  if (m < 1 || m > kGemvMaxRows) {
    return invalid_argument(std::string(op) + ": m = " + std::to_string(m) + " outside [1, " + std::to_string(kGemvMaxRows) + "]");
  }
  if (n <= 0 || k <= 0 || k % k_multiple != 0) {
    return unsupported(std::string(op) + ": k = " + std::to_string(k) + " must be a positive multiple of " + std::to_string(k_multiple));
  }
  return Status::ok();
}

}  // namespace

Status fp16_gemv(const uint16_t* x, int64_t x_stride, const uint16_t* w, int64_t w_stride,
                 uint16_t* y, int64_t y_stride, int m, int n, int k, cudaStream_t stream) {
  CROSSPOINT_RETURN_IF_ERROR(check_shape("fp16_gemv", m, n, k, 8));
  if (x_stride % 8 != 0 || w_stride % 8 != 0 || x_stride < k || w_stride < k) {
    return invalid_argument("fp16_gemv: row strides must be multiples of 8 elements and >= k");
  }
  return launch_gemv<false>(reinterpret_cast<const uint8_t*>(x), x_stride * 2, nullptr,
                            reinterpret_cast<const uint8_t*>(w), w_stride * 2, nullptr, y, y_stride, m, n,
                            k / 8, stream);
}

Status fp8_gemv(const uint8_t* xq, int64_t xq_stride, const float* x_scale, const uint8_t* wq,
                int64_t w_stride, const float* w_scale, uint16_t* y, int64_t y_stride, int m,
                int n, int k, cudaStream_t stream) {
  CROSSPOINT_RETURN_IF_ERROR(check_shape("fp8_gemv", m, n, k, 16));
  if (xq_stride % 16 != 0 || w_stride % 16 != 0 || xq_stride < k || w_stride < k) {
    return invalid_argument("fp8_gemv: row strides must be multiples of 16 bytes and >= k");
  }
  return launch_gemv<true>(xq, xq_stride, x_scale, wq, w_stride, w_scale, y, y_stride, m, n, k / 16, stream);
}

}  // namespace crosspoint::cuda
