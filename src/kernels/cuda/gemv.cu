// Small-batch GEMV kernels (fp16 and fp8 weights). See gemv.h.
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <string>

#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/gemv.h"

namespace crosspoint::cuda {
namespace {

constexpr int kWarpsPerBlock = 8;
constexpr int kLoadsInFlight = 4; // 16-byte chunks per weight row a lane loads before using them

__device__ __forceinline__ float2 half2_bits_to_float2(uint32_t bits) {
  return __half22float2(*reinterpret_cast<const half2*>(&bits));
}

// Two e4m3 values (low byte first) -> two floats, exact.
__device__ __forceinline__ float2 fp8x2_to_float2(uint16_t pair) {
  const __half2_raw raw = __nv_cvt_fp8x2_to_halfraw2(pair, __NV_E4M3);
  return __half22float2(*reinterpret_cast<const half2*>(&raw));
}

// 16 bytes of weights or activations -> fp32 values (8 from fp16, 16 from e4m3), exact.
template <bool kFp8>
struct Chunk {
  static constexpr int kValues = kFp8 ? 16 : 8;
  float v[kValues];
  __device__ __forceinline__ explicit Chunk(uint4 bits) {
    const uint32_t words[4] = {bits.x, bits.y, bits.z, bits.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      if constexpr (kFp8) {
        const float2 lo = fp8x2_to_float2(static_cast<uint16_t>(words[i] & 0xFFFFu));
        const float2 hi = fp8x2_to_float2(static_cast<uint16_t>(words[i] >> 16));
        v[4 * i] = lo.x;
        v[4 * i + 1] = lo.y;
        v[4 * i + 2] = hi.x;
        v[4 * i + 3] = hi.y;
      } else {
        const float2 f = half2_bits_to_float2(words[i]);
        v[2 * i] = f.x;
        v[2 * i + 1] = f.y;
      }
    }
  }
};

// x / w rows are byte pointers; a chunk is 16 bytes (8 fp16 or 16 e4m3 values). Each warp
// computes kCols output columns; each value is converted to fp32 once and reused.
template <bool kFp8, int kRows, int kCols>
__global__ void __launch_bounds__(kWarpsPerBlock * 32)
    gemv_kernel(const uint8_t* __restrict__ x, int64_t x_stride_bytes, const float* __restrict__ x_scale,
                const uint8_t* __restrict__ w, int64_t w_stride_bytes, const float* __restrict__ w_scale,
                uint16_t* __restrict__ y, int64_t y_stride, int m, int n, int num_chunks) {
  const int lane = threadIdx.x % 32;
  const int col0 = (blockIdx.x * kWarpsPerBlock + threadIdx.x / 32) * kCols;
  if (col0 >= n) return;
  const uint4* w_rows[kCols];
#pragma unroll
  for (int c = 0; c < kCols; ++c) {
    w_rows[c] = reinterpret_cast<const uint4*>(w + min(col0 + c, n - 1) * w_stride_bytes);
  }
  float acc[kRows][kCols] = {};
  for (int base = lane; base < num_chunks; base += 32 * kLoadsInFlight) {
    uint4 wv[kCols][kLoadsInFlight];
#pragma unroll
    for (int i = 0; i < kLoadsInFlight; ++i) {
      const int chunk = base + i * 32;
#pragma unroll
      for (int c = 0; c < kCols; ++c) {
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
        const Chunk<kFp8> xc(__ldg(reinterpret_cast<const uint4*>(x + r * x_stride_bytes) + chunk));
#pragma unroll
        for (int c = 0; c < kCols; ++c) {
          const Chunk<kFp8> wc(wv[c][i]);  // re-derived per row; the compiler keeps it for m == 1
#pragma unroll
          for (int e = 0; e < Chunk<kFp8>::kValues; ++e) acc[r][c] = fmaf(wc.v[e], xc.v[e], acc[r][c]);
        }
      }
    }
  }
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
#pragma unroll
    for (int c = 0; c < kCols; ++c) {
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
    for (int c = 0; c < kCols; ++c) {
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
  // fp8 rows are half as long, so a warp takes twice as many to keep as many bytes in flight.
  constexpr int kCols = kFp8 ? 4 : 2;
  const int cols_per_block = kWarpsPerBlock * kCols;
  const dim3 grid((n + cols_per_block - 1) / cols_per_block);
  const dim3 block(kWarpsPerBlock * 32);
  if (m == 1) {
    gemv_kernel<kFp8, 1, kCols><<<grid, block, 0, stream>>>(x, x_stride_bytes, x_scale, w, w_stride_bytes, w_scale, y, y_stride, m, n, num_chunks);
  } else if (m == 2) {
    gemv_kernel<kFp8, 2, kCols><<<grid, block, 0, stream>>>(x, x_stride_bytes, x_scale, w, w_stride_bytes, w_scale, y, y_stride, m, n, num_chunks);
  } else if (m <= 4) {
    gemv_kernel<kFp8, 4, kCols><<<grid, block, 0, stream>>>(x, x_stride_bytes, x_scale, w, w_stride_bytes, w_scale, y, y_stride, m, n, num_chunks);
  } else {
    gemv_kernel<kFp8, 8, kCols><<<grid, block, 0, stream>>>(x, x_stride_bytes, x_scale, w, w_stride_bytes, w_scale, y, y_stride, m, n, num_chunks);
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
