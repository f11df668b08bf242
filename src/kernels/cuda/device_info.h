// The current CUDA device's SM count and compute capability, and how many blocks of a kernel
// fit on one SM: what the launchers' plans need, queried once instead of in every kernel file.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

namespace crosspoint::cuda {

struct CudaDeviceInfo {
  int num_sms = 132;  // when no device answers (plans stay sane; launches fail on their own)
  int major = 0;
  int minor = 0;
  int shared_memory_per_sm = 0;           // bytes all resident blocks share
  int shared_memory_per_block_optin = 0;  // bytes one block may ask for (cudaFuncAttributeMaxDynamicSharedMemorySize)
  int capability() const { return major * 10 + minor; }  // 90 for sm_90
};

// Read once, for the device current at the first call (one device per process). Leaves no
// CUDA error behind when there is no device.
const CudaDeviceInfo& cuda_device_info();

// Blocks of `kernel` resident per SM with `threads` threads and `shared_bytes` of dynamic
// shared memory, after allowing that much; 0 (and no CUDA error left behind) when it cannot
// be resident. Call once per kernel instantiation and keep the result.
template <typename Kernel>
int resident_blocks_per_sm(Kernel kernel, int threads, size_t shared_bytes) {
  int blocks = 0;
  if (cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(shared_bytes)) !=
          cudaSuccess ||
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, threads, shared_bytes) != cudaSuccess) {
    cudaGetLastError();  // the failed call must not leak into the next launch's status
    return 0;
  }
  return blocks;
}

}  // namespace crosspoint::cuda
