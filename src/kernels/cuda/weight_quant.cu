// One block per output channel: the row's amax, then its codes.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cfloat>
#include <string>

#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/weight_quant.h"

namespace crosspoint::cuda {
namespace {

constexpr int kThreads = 256;

template <typename T>
__device__ __forceinline__ float load_f32(const T* w, int64_t i);
template <>
__device__ __forceinline__ float load_f32<float>(const float* w, int64_t i) {
  return w[i];
}
template <>
__device__ __forceinline__ float load_f32<__half>(const __half* w, int64_t i) {
  return __half2float(w[i]);
}
template <>
__device__ __forceinline__ float load_f32<__nv_bfloat16>(const __nv_bfloat16* w, int64_t i) {
  return __bfloat162float(w[i]);
}

__device__ __forceinline__ uint8_t int8_code(float v) {
  if (isnan(v)) return 0;
  return static_cast<uint8_t>(static_cast<int8_t>(__float2int_rn(fminf(fmaxf(rintf(v), -128.0f), 127.0f))));
}

template <typename T, WeightQuantScheme kScheme>
__global__ void __launch_bounds__(kThreads)
    quantize_rows_kernel(const T* __restrict__ w, int64_t k, uint8_t* __restrict__ q, float* __restrict__ scale) {
  const int64_t row = blockIdx.x;
  const T* in = w + row * k;
  uint8_t* out = q + row * k;
  float amax = 0.f;
  for (int64_t i = threadIdx.x; i < k; i += kThreads) amax = fmaxf(amax, fabsf(load_f32(in, i)));
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, offset));
  __shared__ float warp_amax[kThreads / 32];
  __shared__ float row_scale;
  if (threadIdx.x % 32 == 0) warp_amax[threadIdx.x / 32] = amax;
  __syncthreads();
  if (threadIdx.x == 0) {
    float a = 0.f;
    for (int i = 0; i < kThreads / 32; ++i) a = fmaxf(a, warp_amax[i]);
    row_scale = kScheme == WeightQuantScheme::kFp8E4M3 ? fmaxf(__fdiv_rn(a, 448.0f), FLT_EPSILON)
                                                       : __fdiv_rn(fmaxf(a, FLT_EPSILON), 127.5f);
    scale[row] = row_scale;
  }
  __syncthreads();
  const float s = row_scale;
  for (int64_t i = threadIdx.x; i < k; i += kThreads) {
    const float v = __fdiv_rn(load_f32(in, i), s);
    out[i] = kScheme == WeightQuantScheme::kFp8E4M3
                 ? static_cast<uint8_t>(__nv_cvt_float_to_fp8(v, __NV_SATFINITE, __NV_E4M3))
                 : int8_code(v);
  }
}

template <typename T>
cudaError_t launch(const void* w, int64_t n, int64_t k, WeightQuantScheme scheme, uint8_t* q, float* scale,
                   cudaStream_t stream) {
  const T* in = static_cast<const T*>(w);
  if (scheme == WeightQuantScheme::kFp8E4M3)
    quantize_rows_kernel<T, WeightQuantScheme::kFp8E4M3>
        <<<static_cast<unsigned>(n), kThreads, 0, stream>>>(in, k, q, scale);
  else
    quantize_rows_kernel<T, WeightQuantScheme::kInt8>
        <<<static_cast<unsigned>(n), kThreads, 0, stream>>>(in, k, q, scale);
  return cudaGetLastError();
}

}  // namespace

Status quantize_weight_per_channel(const void* w, DType dtype, int64_t n, int64_t k, WeightQuantScheme scheme,
                                   uint8_t* q, float* scale, cudaStream_t stream) {
  if (n == 0) return Status::ok();
  if (n < 0 || n > 0x7fffffff || k <= 0)
    return invalid_argument("quantize_weight_per_channel: bad shape " + std::to_string(n) + " x " + std::to_string(k));
  if (w == nullptr || q == nullptr || scale == nullptr)
    return invalid_argument("quantize_weight_per_channel: null pointer argument");
  cudaError_t err;
  switch (dtype) {
    case DType::kF32: err = launch<float>(w, n, k, scheme, q, scale, stream); break;
    case DType::kF16: err = launch<__half>(w, n, k, scheme, q, scale, stream); break;
    case DType::kBF16: err = launch<__nv_bfloat16>(w, n, k, scheme, q, scale, stream); break;
    default: return unsupported("quantize_weight_per_channel: weights must be f32, f16 or bf16");
  }
  CROSSPOINT_CUDA_RETURN_IF_ERROR(err, "quantize_weight_per_channel launch");
  return Status::ok();
}

}  // namespace crosspoint::cuda
