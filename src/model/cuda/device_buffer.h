// Owning handles for CUDA memory: device allocations (DeviceBuffer) and page-locked host
// staging (PinnedBuffer), one template over where the bytes live. Freed in the destructor,
// movable, never copied. Allocation failures come back as a Status naming what was being
// allocated and how much.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <string>
#include <utility>

#include "common/status.h"

namespace crosspoint::cuda {

enum class CudaMemory {
  kDevice,      // cudaMalloc / cudaFree
  kPinnedHost,  // cudaMallocHost / cudaFreeHost: host memory the GPU copies to and from asynchronously
};

template <CudaMemory kMemory>
class CudaBuffer {
 public:
  CudaBuffer() = default;
  ~CudaBuffer() { reset(); }
  CudaBuffer(CudaBuffer&& o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  CudaBuffer& operator=(CudaBuffer&& o) noexcept {
    if (this != &o) {
      reset();
      ptr_ = std::exchange(o.ptr_, nullptr);
      bytes_ = std::exchange(o.bytes_, 0);
    }
    return *this;
  }
  CudaBuffer(const CudaBuffer&) = delete;
  CudaBuffer& operator=(const CudaBuffer&) = delete;

  // bytes == 0 gives an empty buffer (nullptr).
  static Result<CudaBuffer> allocate(size_t bytes, const std::string& what) {
    CudaBuffer b;
    if (bytes == 0) return b;
    cudaError_t err;
    if constexpr (kMemory == CudaMemory::kDevice) {
      err = cudaMalloc(&b.ptr_, bytes);
    } else {
      err = cudaMallocHost(&b.ptr_, bytes);
    }
    if (err != cudaSuccess) {
      b.ptr_ = nullptr;
      (void)cudaGetLastError();  // clear the runtime's last error so that later checks do not see it
      return resource_exhausted("cuda: allocating " + std::to_string(bytes) +
                                (kMemory == CudaMemory::kDevice ? " bytes for " : " pinned host bytes for ") + what +
                                ": " + cudaGetErrorString(err));
    }
    b.bytes_ = bytes;
    return b;
  }

  void reset() {
    if (ptr_ != nullptr) {
      if constexpr (kMemory == CudaMemory::kDevice) {
        (void)cudaFree(ptr_);
      } else {
        (void)cudaFreeHost(ptr_);
      }
    }
    ptr_ = nullptr;
    bytes_ = 0;
  }
  template <typename T = void>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  size_t bytes() const { return bytes_; }
  bool empty() const { return ptr_ == nullptr; }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

using DeviceBuffer = CudaBuffer<CudaMemory::kDevice>;
using PinnedBuffer = CudaBuffer<CudaMemory::kPinnedHost>;

}  // namespace crosspoint::cuda
