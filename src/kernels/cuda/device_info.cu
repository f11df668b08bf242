#include "kernels/cuda/device_info.h"

namespace crosspoint::cuda {

const CudaDeviceInfo& cuda_device_info() {
  static const CudaDeviceInfo info = [] {
    CudaDeviceInfo d;
    int device = 0;
    if (cudaGetDevice(&device) == cudaSuccess) {
      cudaDeviceGetAttribute(&d.num_sms, cudaDevAttrMultiProcessorCount, device);
      cudaDeviceGetAttribute(&d.major, cudaDevAttrComputeCapabilityMajor, device);
      cudaDeviceGetAttribute(&d.minor, cudaDevAttrComputeCapabilityMinor, device);
      cudaDeviceGetAttribute(&d.shared_memory_per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, device);
      cudaDeviceGetAttribute(&d.shared_memory_per_block_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
    }
    cudaGetLastError();  // no device: leave no error behind for the next launch
    return d;
  }();
  return info;
}

}  // namespace crosspoint::cuda
