#include <cuda_fp16.h>

#include "gpu/fill_random.h"

namespace crosspoint::bench {
namespace {

__device__ __forceinline__ uint32_t hash32(uint64_t i, uint32_t seed) {
  uint64_t x = i * 0x9E3779B97F4A7C15ull + seed;
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 29;
  return static_cast<uint32_t>(x);
}

__device__ __forceinline__ float unit(uint64_t i, uint32_t seed) {
  return (hash32(i, seed) >> 8) * (1.0f / 16777216.0f);
}

__global__ void fill_f16_kernel(uint16_t* p, size_t n, float lo, float hi, uint32_t seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    p[i] = __half_as_ushort(__float2half_rn(lo + (hi - lo) * unit(i, seed)));
}
__global__ void fill_f32_kernel(float* p, size_t n, float lo, float hi, uint32_t seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    p[i] = lo + (hi - lo) * unit(i, seed);
}
__global__ void fill_e4m3_kernel(uint8_t* p, size_t n, uint32_t seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    const uint32_t c = hash32(i, seed) & 0xFFu;
    p[i] = static_cast<uint8_t>((c & 0x7F) == 0x7F ? 0x7E : c);
  }
}
__global__ void fill_u32_kernel(uint32_t* p, size_t n, uint32_t seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    p[i] = hash32(i, seed);
}

constexpr int kBlocks = 4096, kThreads = 256;

}  // namespace

void fill_f16(uint16_t* p, size_t count, float lo, float hi, uint32_t seed, cudaStream_t stream) {
  fill_f16_kernel<<<kBlocks, kThreads, 0, stream>>>(p, count, lo, hi, seed);
}
void fill_f32(float* p, size_t count, float lo, float hi, uint32_t seed, cudaStream_t stream) {
  fill_f32_kernel<<<kBlocks, kThreads, 0, stream>>>(p, count, lo, hi, seed);
}
void fill_e4m3(uint8_t* p, size_t count, uint32_t seed, cudaStream_t stream) {
  fill_e4m3_kernel<<<kBlocks, kThreads, 0, stream>>>(p, count, seed);
}
void fill_u32(uint32_t* p, size_t count, uint32_t seed, cudaStream_t stream) {
  fill_u32_kernel<<<kBlocks, kThreads, 0, stream>>>(p, count, seed);
}

}  // namespace crosspoint::bench
