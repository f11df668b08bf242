// w4a16_gemm: the shape checks and the rows -> kernel choice of w4a16_gemm.h, and the
// activation permutation act-order weights need. The kernels live beside it:
// w4a16_gemv.cu, w4a16_gemm_wgmma.cu, w4a16_gemm_large.cu.
#include <algorithm>
#include <string>

#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/w4a16_gemm.h"
#include "kernels/cuda/w4a16_gemv.h"

namespace crosspoint::cuda {
namespace {

constexpr int kChunkK = 64;          // input rows per packed chunk
constexpr int kWgmmaMaxK = 1 << 27;  // the wgmma kernel's float scale-group index

__global__ void permute_columns_kernel(const uint16_t* __restrict__ x, const int32_t* __restrict__ k_perm,
                                       uint16_t* __restrict__ x_out, int k) {
  const int row = blockIdx.y;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < k; i += gridDim.x * blockDim.x) {
    x_out[static_cast<int64_t>(row) * k + i] = x[static_cast<int64_t>(row) * k + k_perm[i]];
  }
}

Status check_shapes(const uint16_t* x, int64_t x_stride, const uint32_t* packed_weight, const uint32_t* packed_scales,
                    const uint16_t* y, int64_t y_stride, int m, int n, int k, int group_size) {
  if (m < 0) return invalid_argument("w4a16_gemm: m = " + std::to_string(m));
  if (k <= 0 || k % kChunkK != 0)
    return unsupported("w4a16_gemm: k = " + std::to_string(k) + " is not a positive multiple of 64");
  if (n <= 0 || n % 16 != 0)
    return unsupported("w4a16_gemm: n = " + std::to_string(n) + " is not a positive multiple of 16");
  if (group_size == -1) group_size = k;
  if (group_size != 32 && (group_size <= 0 || (group_size % kChunkK != 0 && group_size != k)))
    return unsupported("w4a16_gemm: group_size " + std::to_string(group_size) + " is not 32 or a multiple of 64");
  if (x_stride < k || x_stride % 8 != 0)
    return invalid_argument("w4a16_gemm: x_stride must be a multiple of 8 and >= k");
  if (y_stride < n) return invalid_argument("w4a16_gemm: y_stride must be >= n");
  if (x == nullptr || packed_weight == nullptr || packed_scales == nullptr || y == nullptr)
    return invalid_argument("w4a16_gemm: null pointer argument");
  return Status::ok();
}

}  // namespace

W4A16Kernel w4a16_kernel_for(int m, int n, int k, bool wgmma_supported) {
  if (m <= kW4A16GemvMaxRows) return W4A16Kernel::kGemv;
  if (wgmma_supported && n % 64 == 0 && k < kWgmmaMaxK) return W4A16Kernel::kWgmma;
  return W4A16Kernel::kLargeTile;
}

Status w4a16_gemm(const uint16_t* x, int64_t x_stride, const uint32_t* packed_weight, const uint32_t* packed_scales,
                  uint16_t* y, int64_t y_stride, int m, int n, int k, int group_size, cudaStream_t stream,
                  const uint32_t* packed_zeros) {
  // Shapes first: a bad call is refused without querying the device.
  CROSSPOINT_RETURN_IF_ERROR(check_shapes(x, x_stride, packed_weight, packed_scales, y, y_stride, m, n, k, group_size));
  const W4A16Kernel kernel = w4a16_kernel_for(m, n, k, m > kW4A16GemvMaxRows && w4a16_wgmma_supported());
  return w4a16_gemm_with(kernel, x, x_stride, packed_weight, packed_scales, y, y_stride, m, n, k, group_size, stream,
                         packed_zeros);
}

Status w4a16_gemm_with(W4A16Kernel kernel, const uint16_t* x, int64_t x_stride, const uint32_t* packed_weight,
                       const uint32_t* packed_scales, uint16_t* y, int64_t y_stride, int m, int n, int k,
                       int group_size, cudaStream_t stream, const uint32_t* packed_zeros) {
  if (kernel == W4A16Kernel::kWgmma && n % 64 != 0)  // before the pointer checks: refused on any device
    return unsupported("w4a16_gemm: n = " + std::to_string(n) + " is not a multiple of 64, which kWgmma needs");
  CROSSPOINT_RETURN_IF_ERROR(check_shapes(x, x_stride, packed_weight, packed_scales, y, y_stride, m, n, k, group_size));
  if (m == 0) return Status::ok();
  if (group_size == -1) group_size = k;
  switch (kernel) {
    case W4A16Kernel::kGemv:
      return w4a16_gemv(x, x_stride, packed_weight, packed_scales, y, y_stride, m, n, k, group_size, stream,
                        /*warps_per_block=*/0, packed_zeros);
    case W4A16Kernel::kWgmma:
      return w4a16_gemm_wgmma(x, x_stride, packed_weight, packed_scales, y, y_stride, m, n, k, group_size,
                              W4A16WgmmaOptions{}, stream, packed_zeros);
    case W4A16Kernel::kLargeTile:
      return w4a16_gemm_large(x, x_stride, packed_weight, packed_scales, y, y_stride, m, n, k, group_size, stream,
                              packed_zeros);
  }
  return internal_error("w4a16_gemm: unknown kernel");
}

Status w4a16_permute_columns(const uint16_t* x, const int32_t* k_perm, uint16_t* x_out, int m, int k,
                             cudaStream_t stream) {
  if (m <= 0 || k <= 0) return m == 0 ? Status::ok() : invalid_argument("w4a16_permute_columns: bad shape");
  const dim3 grid(std::min((k + 255) / 256, 64), m);
  permute_columns_kernel<<<grid, 256, 0, stream>>>(x, k_perm, x_out, k);
  return last_launch_status("w4a16_permute_columns launch");
}

}  // namespace crosspoint::cuda
