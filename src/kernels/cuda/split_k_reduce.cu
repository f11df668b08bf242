#include "kernels/cuda/split_k_reduce.h"

#include <cuda_fp16.h>

#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/programmatic_launch.cuh"

namespace crosspoint::cuda {
namespace {

// One thread per 4 outputs of a row (n % 4 == 0 and 16-byte rows) or per output otherwise.
template <int kVec>
__global__ void split_k_sum_kernel(const float* __restrict__ partials, int splits, int64_t split_stride,
                                   __half* __restrict__ y, int64_t y_stride, int m, int n) {
  wait_for_prior_kernels();
  allow_dependent_launch();
  const int row = blockIdx.y;
  const int col = (blockIdx.x * blockDim.x + threadIdx.x) * kVec;
  if (row >= m || col >= n) return;
  const float* p = partials + static_cast<int64_t>(row) * n + col;
  if constexpr (kVec == 4) {
    float4 sum = *reinterpret_cast<const float4*>(p);
    for (int s = 1; s < splits; ++s) {
      const float4 v = *reinterpret_cast<const float4*>(p + s * split_stride);
      sum.x += v.x;
      sum.y += v.y;
      sum.z += v.z;
      sum.w += v.w;
    }
    __half2* out = reinterpret_cast<__half2*>(y + static_cast<int64_t>(row) * y_stride + col);
    out[0] = __floats2half2_rn(sum.x, sum.y);
    out[1] = __floats2half2_rn(sum.z, sum.w);
  } else {
    float sum = p[0];
    for (int s = 1; s < splits; ++s) sum += p[s * split_stride];
    y[static_cast<int64_t>(row) * y_stride + col] = __float2half_rn(sum);
  }
}

}  // namespace

Status split_k_sum_to_f16(const float* partials, int splits, int64_t split_stride, uint16_t* y, int64_t y_stride,
                          int m, int n, cudaStream_t stream) {
  if (splits < 1 || m < 0 || n < 0 || y_stride < n || split_stride < static_cast<int64_t>(m) * n) {
    return invalid_argument("split_k_sum_to_f16: bad sizes (splits " + std::to_string(splits) + ", m " +
                            std::to_string(m) + ", n " + std::to_string(n) + ")");
  }
  if (m == 0 || n == 0) return Status::ok();
  constexpr int kThreads = 128;
  const bool vector = n % 4 == 0 && y_stride % 4 == 0 && split_stride % 4 == 0 &&
                      reinterpret_cast<uintptr_t>(partials) % 16 == 0 && reinterpret_cast<uintptr_t>(y) % 8 == 0;
  auto* out = reinterpret_cast<__half*>(y);
  if (vector) {
    const dim3 grid((n / 4 + kThreads - 1) / kThreads, m);
    return cuda_status(launch_programmatic(split_k_sum_kernel<4>, grid, dim3(kThreads), 0, stream, partials, splits,
                                           split_stride, out, y_stride, m, n),
                       "split_k_sum_to_f16 launch");
  }
  const dim3 grid((n + kThreads - 1) / kThreads, m);
  return cuda_status(launch_programmatic(split_k_sum_kernel<1>, grid, dim3(kThreads), 0, stream, partials, splits,
                                         split_stride, out, y_stride, m, n),
                     "split_k_sum_to_f16 launch");
}

void split_k_sum_to_f16_reference(const float* partials, int splits, int64_t split_stride, uint16_t* y,
                                  int64_t y_stride, int m, int n) {
  for (int row = 0; row < m; ++row) {
    for (int col = 0; col < n; ++col) {
      const float* p = partials + static_cast<int64_t>(row) * n + col;
      float sum = p[0];
      for (int s = 1; s < splits; ++s) sum += p[s * split_stride];
      y[static_cast<int64_t>(row) * y_stride + col] = __half_as_ushort(__float2half_rn(sum));
    }
  }
}

}  // namespace crosspoint::cuda
