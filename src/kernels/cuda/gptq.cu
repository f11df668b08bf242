// GPTQ's column loop: one thread per output column n, the block's rows of that column in shared
// memory beside the block's factor; the lazy update as a tiled kernel, one thread per column
// and 16 later rows, the i loop innermost so every weight sees its updates in the host's order.
#include <cuda_fp16.h>

#include <algorithm>

#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/gptq.h"

namespace crosspoint::cuda {
namespace {

constexpr int kMaxQ = 15;
constexpr int kBlockColumns = 64;    // threads (output columns) per block of the column loop
constexpr int kUpdateColumns = 128;  // threads per block of the lazy update
constexpr int kUpdateRows = 16;      // later rows per thread of the lazy update

unsigned blocks_for(int64_t count, int threads) {
  return static_cast<unsigned>(std::min<int64_t>((count + threads - 1) / threads, 1 << 20));
}

__global__ void add_to_hessian_kernel(const float* __restrict__ partial, double* __restrict__ h, int64_t count) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    h[i] += static_cast<double>(partial[i]);
}

__global__ void reversed_permuted_kernel(const double* __restrict__ h, const int32_t* __restrict__ perm, double damp,
                                         int64_t K, double* __restrict__ out) {
  const int64_t count = K * K;
  for (int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; idx < count;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t i = idx / K, j = idx % K;
    double v = h[static_cast<int64_t>(perm[i]) * K + perm[j]];
    if (i == j) {
      if (v == 0.0) v = 1.0;
      v += damp;
    }
    out[(K - 1 - i) * K + (K - 1 - j)] = v;
  }
}

__global__ void identity_kernel(double* __restrict__ a, int64_t K) {
  const int64_t count = K * K;
  for (int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; idx < count;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x)
    a[idx] = idx / K == idx % K ? 1.0 : 0.0;
}

__global__ void upper_factor_kernel(const double* __restrict__ m_inv, int64_t K, float* __restrict__ u,
                                    double* __restrict__ u_diag) {
  const int64_t count = K * K;
  for (int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; idx < count;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t i = idx / K, j = idx % K;
    const double v = j >= i ? m_inv[(K - 1 - i) * K + (K - 1 - j)] : 0.0;
    u[idx] = static_cast<float>(v);
    if (i == j) u_diag[i] = v;
  }
}

__global__ void transpose_kernel(const __half* __restrict__ w_nk, int64_t N, int64_t K, float* __restrict__ w_t) {
  __shared__ float tile[32][33];
  const int64_t k0 = static_cast<int64_t>(blockIdx.x) * 32, n0 = static_cast<int64_t>(blockIdx.y) * 32;
  for (int r = threadIdx.y; r < 32; r += blockDim.y) {
    const int64_t n = n0 + r, k = k0 + threadIdx.x;
    if (n < N && k < K) tile[r][threadIdx.x] = __half2float(w_nk[n * K + k]);
  }
  __syncthreads();
  for (int r = threadIdx.y; r < 32; r += blockDim.y) {
    const int64_t k = k0 + r, n = n0 + threadIdx.x;
    if (n < N && k < K) w_t[k * N + n] = tile[threadIdx.x][r];
  }
}

__global__ void gather_rows_kernel(const float* __restrict__ src, const int32_t* __restrict__ perm,
                                   const uint8_t* __restrict__ dead, int64_t K, int64_t N, float* __restrict__ dst) {
  const int64_t count = K * N;
  for (int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; idx < count;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t i = idx / N, n = idx % N;
    const int64_t s = perm[i];
    dst[idx] = dead != nullptr && dead[s] ? 0.0f : src[s * N + n];
  }
}

// find_group_params for one column, from a running min and max.
struct Params {
  float scale;
  uint8_t zero;
};

__device__ __forceinline__ Params params_of(float lo, float hi, bool sym) {
  if (sym) {
    hi = fmaxf(-lo, hi);
    lo = -hi;
  }
  if (lo == 0.0f && hi == 0.0f) {
    lo = -1.0f;
    hi = 1.0f;
  }
  float scale = __half2float(__float2half_rn(__fdiv_rn(hi - lo, static_cast<float>(kMaxQ))));
  if (!(scale > 0.0f)) scale = __half2float(__ushort_as_half(static_cast<unsigned short>(1)));
  const uint8_t zero =
      sym ? static_cast<uint8_t>((kMaxQ + 1) / 2)
          : static_cast<uint8_t>(fminf(fmaxf(rintf(__fdiv_rn(-lo, scale)), 0.0f), static_cast<float>(kMaxQ)));
  return {scale, zero};
}

__device__ __forceinline__ uint8_t quantize_value(float w, float scale, uint8_t zero) {
  return static_cast<uint8_t>(
      fminf(fmaxf(__fadd_rn(rintf(__fdiv_rn(w, scale)), static_cast<float>(zero)), 0.0f), static_cast<float>(kMaxQ)));
}

__global__ void group_params_kernel(const float* __restrict__ w_t, int64_t N, int64_t row_begin, int64_t row_end,
                                    bool sym, float* __restrict__ scale, uint8_t* __restrict__ zero) {
  const int64_t n = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (n >= N) return;
  float lo = 0.0f, hi = 0.0f;
  for (int64_t k = row_begin; k < row_end; ++k) {
    const float v = w_t[k * N + n];
    lo = fminf(lo, v);
    hi = fmaxf(hi, v);
  }
  const Params p = params_of(lo, hi, sym);
  scale[n] = p.scale;
  zero[n] = p.zero;
}

// Steps [b0, b1): rows of the block in ws [rows][kBlockColumns], the block's factor in us.
__global__ void __launch_bounds__(kBlockColumns) quantize_block_kernel(GptqColumnArgs a, int64_t b0, int64_t b1) {
  extern __shared__ float smem[];
  const int rows = static_cast<int>(b1 - b0);
  float* us = smem;                                         // [rows, rows] when error_feedback
  float* ws = smem + (a.error_feedback ? rows * rows : 0);  // [rows, kBlockColumns]
  const int tx = threadIdx.x;
  const int64_t n = static_cast<int64_t>(blockIdx.x) * kBlockColumns + tx;
  const int64_t N = a.N, K = a.K, G = a.group_size;
  const bool active = n < N;
  if (a.error_feedback)
    for (int idx = tx; idx < rows * rows; idx += kBlockColumns) us[idx] = a.u[(b0 + idx / rows) * K + b0 + idx % rows];
  for (int r = 0; r < rows; ++r) ws[r * kBlockColumns + tx] = active ? a.w[(b0 + r) * N + n] : 0.0f;
  __syncthreads();
  if (!active) return;

  Params p{1.0f, 0};
  if (!a.static_groups && b0 % G != 0) {  // a group begun in an earlier block
    p.scale = a.group_scale[(b0 / G) * N + n];
    p.zero = a.group_zero[(b0 / G) * N + n];
  }
  double loss = 0.0;
  for (int64_t i = b0; i < b1; ++i) {
    const int64_t src = a.perm[i];
    if (a.static_groups) {
      const int64_t g = src / G;
      p.scale = a.group_scale[g * N + n];
      p.zero = a.group_zero[g * N + n];
      if (n == 0) a.g_idx[src] = static_cast<int32_t>(g);
    } else {
      if (i % G == 0) {
        const int64_t end = i + G < K ? i + G : K;
        float lo = 0.0f, hi = 0.0f;
        for (int64_t r = i; r < end; ++r) {
          const float v = r < b1 ? ws[(r - b0) * kBlockColumns + tx] : a.w[r * N + n];
          lo = fminf(lo, v);
          hi = fmaxf(hi, v);
        }
        p = params_of(lo, hi, a.sym);
        a.group_scale[(i / G) * N + n] = p.scale;
        a.group_zero[(i / G) * N + n] = p.zero;
      }
      if (n == 0) a.g_idx[src] = static_cast<int32_t>(i / G);
    }
    const float wv = ws[(i - b0) * kBlockColumns + tx];
    const uint8_t q = quantize_value(wv, p.scale, p.zero);
    a.q[src * N + n] = q;
    // The host computes w - scale * (q - zero) as one fused multiply-add.
    const float diff = fmaf(-p.scale, __fsub_rn(static_cast<float>(q), static_cast<float>(p.zero)), wv);
    if (!a.error_feedback) {
      loss += static_cast<double>(diff) * diff;
      continue;
    }
    const double d = a.u_diag[i];
    const float e = static_cast<float>(static_cast<double>(diff) / d);
    a.err[(i - b0) * N + n] = e;
    loss += static_cast<double>(diff) * diff / (d * d) / 2.0;
    const float* urow = us + (i - b0) * rows;
    for (int64_t j = i + 1; j < b1; ++j) {
      float& wj = ws[(j - b0) * kBlockColumns + tx];
      wj = fmaf(-urow[j - b0], e, wj);
    }
  }
  a.loss[n] += loss;
}

__global__ void __launch_bounds__(kUpdateColumns) update_later_rows_kernel(GptqColumnArgs a, int64_t b0, int64_t b1) {
  __shared__ float us[kGptqMaxBlock][kUpdateRows];
  const int rows = static_cast<int>(b1 - b0);
  const int64_t N = a.N, K = a.K;
  const int64_t j0 = b1 + static_cast<int64_t>(blockIdx.y) * kUpdateRows;
  for (int idx = threadIdx.x; idx < rows * kUpdateRows; idx += kUpdateColumns) {
    const int ii = idx / kUpdateRows, jj = idx % kUpdateRows;
    us[ii][jj] = j0 + jj < K ? a.u[(b0 + ii) * K + j0 + jj] : 0.0f;
  }
  __syncthreads();
  const int64_t n = static_cast<int64_t>(blockIdx.x) * kUpdateColumns + threadIdx.x;
  if (n >= N) return;
  const int later = static_cast<int>(K - j0 < kUpdateRows ? K - j0 : kUpdateRows);
  float w[kUpdateRows];
#pragma unroll
  for (int jj = 0; jj < kUpdateRows; ++jj) w[jj] = jj < later ? a.w[(j0 + jj) * N + n] : 0.0f;
  for (int ii = 0; ii < rows; ++ii) {
    const float e = a.err[ii * N + n];
#pragma unroll
    for (int jj = 0; jj < kUpdateRows; ++jj) w[jj] = fmaf(-us[ii][jj], e, w[jj]);
  }
#pragma unroll
  for (int jj = 0; jj < kUpdateRows; ++jj)
    if (jj < later) a.w[(j0 + jj) * N + n] = w[jj];
}

__global__ void dequantize_kernel(const uint8_t* __restrict__ q, const int32_t* __restrict__ g_idx,
                                  const float* __restrict__ scale, const uint8_t* __restrict__ zero, int64_t K,
                                  int64_t N, __half* __restrict__ w_nk) {
  const int64_t count = K * N;
  for (int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; idx < count;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t n = idx / K, k = idx % K;
    const int64_t g = g_idx[k];
    const float v = scale[g * N + n] * (static_cast<float>(q[k * N + n]) - static_cast<float>(zero[g * N + n]));
    w_nk[idx] = __float2half_rn(v);
  }
}

}  // namespace

Status gptq_add_to_hessian(const float* partial, double* h, int64_t count, cudaStream_t stream) {
  if (count <= 0) return Status::ok();
  add_to_hessian_kernel<<<blocks_for(count, 256), 256, 0, stream>>>(partial, h, count);
  return last_launch_status("gptq_add_to_hessian");
}

Status gptq_reversed_permuted_hessian(const double* h, const int32_t* perm, double damp, int64_t K, double* out,
                                      cudaStream_t stream) {
  reversed_permuted_kernel<<<blocks_for(K * K, 256), 256, 0, stream>>>(h, perm, damp, K, out);
  return last_launch_status("gptq_reversed_permuted_hessian");
}

Status gptq_set_identity(double* a, int64_t K, cudaStream_t stream) {
  identity_kernel<<<blocks_for(K * K, 256), 256, 0, stream>>>(a, K);
  return last_launch_status("gptq_set_identity");
}

Status gptq_upper_factor(const double* m_inv, int64_t K, float* u, double* u_diag, cudaStream_t stream) {
  upper_factor_kernel<<<blocks_for(K * K, 256), 256, 0, stream>>>(m_inv, K, u, u_diag);
  return last_launch_status("gptq_upper_factor");
}

Status gptq_transpose_weight(const uint16_t* w_nk, int64_t N, int64_t K, float* w_t, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>((K + 31) / 32), static_cast<unsigned>((N + 31) / 32));
  transpose_kernel<<<grid, dim3(32, 8), 0, stream>>>(reinterpret_cast<const __half*>(w_nk), N, K, w_t);
  return last_launch_status("gptq_transpose_weight");
}

Status gptq_gather_rows(const float* src, const int32_t* perm, const uint8_t* dead, int64_t K, int64_t N, float* dst,
                        cudaStream_t stream) {
  gather_rows_kernel<<<blocks_for(K * N, 256), 256, 0, stream>>>(src, perm, dead, K, N, dst);
  return last_launch_status("gptq_gather_rows");
}

Status gptq_group_params(const float* w_t, int64_t N, int64_t row_begin, int64_t row_end, bool sym, float* scale,
                         uint8_t* zero, cudaStream_t stream) {
  group_params_kernel<<<blocks_for(N, 128), 128, 0, stream>>>(w_t, N, row_begin, row_end, sym, scale, zero);
  return last_launch_status("gptq_group_params");
}

Status gptq_quantize_block(const GptqColumnArgs& a, int64_t b0, int64_t b1, cudaStream_t stream) {
  const int rows = static_cast<int>(b1 - b0);
  if (rows <= 0 || rows > kGptqMaxBlock || a.group_size <= 0 || a.K % a.group_size != 0)
    return invalid_argument("gptq_quantize_block: a block of 1 to 128 steps and a group size dividing K");
  if (a.error_feedback && (a.u == nullptr || a.u_diag == nullptr || a.err == nullptr))
    return invalid_argument("gptq_quantize_block: error feedback needs the factor and the error buffer");
  const size_t smem = sizeof(float) * ((a.error_feedback ? rows * rows : 0) + rows * kBlockColumns);
  static const cudaError_t attr = cudaFuncSetAttribute(
      quantize_block_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
      static_cast<int>(sizeof(float) * (kGptqMaxBlock * kGptqMaxBlock + kGptqMaxBlock * kBlockColumns)));
  CROSSPOINT_RETURN_IF_ERROR(cuda_status(attr, "gptq_quantize_block: shared memory"));
  quantize_block_kernel<<<blocks_for(a.N, kBlockColumns), kBlockColumns, smem, stream>>>(a, b0, b1);
  return last_launch_status("gptq_quantize_block");
}

Status gptq_update_later_rows(const GptqColumnArgs& a, int64_t b0, int64_t b1, cudaStream_t stream) {
  if (b1 >= a.K || !a.error_feedback) return Status::ok();
  if (b1 - b0 <= 0 || b1 - b0 > kGptqMaxBlock) return invalid_argument("gptq_update_later_rows: 1 to 128 steps");
  const dim3 grid(blocks_for(a.N, kUpdateColumns), static_cast<unsigned>((a.K - b1 + kUpdateRows - 1) / kUpdateRows));
  update_later_rows_kernel<<<grid, kUpdateColumns, 0, stream>>>(a, b0, b1);
  return last_launch_status("gptq_update_later_rows");
}

Status gptq_dequantize_fp16(const uint8_t* q, const int32_t* g_idx, const float* group_scale, const uint8_t* group_zero,
                            int64_t K, int64_t N, uint16_t* w_nk, cudaStream_t stream) {
  dequantize_kernel<<<blocks_for(K * N, 256), 256, 0, stream>>>(q, g_idx, group_scale, group_zero, K, N,
                                                                reinterpret_cast<__half*>(w_nk));
  return last_launch_status("gptq_dequantize_fp16");
}

}  // namespace crosspoint::cuda
