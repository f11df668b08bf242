// Owning handles for CUDA memory: device allocations and page-locked host staging, freed in
// the destructor, movable, never copied. Allocation failures come back as a Status naming
// what was being allocated and how much.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <string>
#include <utility>

#include "common/status.h"

namespace crosspoint::cuda {

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  ~DeviceBuffer() { reset(); }
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      reset();
      ptr_ = std::exchange(o.ptr_, nullptr);
      bytes_ = std::exchange(o.bytes_, 0);
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  // bytes == 0 gives an empty buffer (nullptr).
  static Result<DeviceBuffer> allocate(size_t bytes, const std::string& what) {
    DeviceBuffer b;
    if (bytes == 0) return b;
    const cudaError_t err = cudaMalloc(&b.ptr_, bytes);
    if (err != cudaSuccess) {
      (void)cudaGetLastError();  // clear the sticky-free error state of the runtime
      return resource_exhausted("cuda: allocating " + std::to_string(bytes) + " bytes for " + what + ": " +
                                cudaGetErrorString(err));
    }
    b.bytes_ = bytes;
    return b;
  }

  void reset() {
    if (ptr_ != nullptr) (void)cudaFree(ptr_);
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

class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  ~PinnedBuffer() { reset(); }
  PinnedBuffer(PinnedBuffer&& o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  PinnedBuffer& operator=(PinnedBuffer&& o) noexcept {
    if (this != &o) {
      reset();
      ptr_ = std::exchange(o.ptr_, nullptr);
      bytes_ = std::exchange(o.bytes_, 0);
    }
    return *this;
  }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

  static Result<PinnedBuffer> allocate(size_t bytes, const std::string& what) {
    PinnedBuffer b;
    if (bytes == 0) return b;
    const cudaError_t err = cudaMallocHost(&b.ptr_, bytes);
    if (err != cudaSuccess) {
      (void)cudaGetLastError();
      return resource_exhausted("cuda: allocating " + std::to_string(bytes) + " pinned host bytes for " + what + ": " +
                                cudaGetErrorString(err));
    }
    b.bytes_ = bytes;
    return b;
  }

  void reset() {
    if (ptr_ != nullptr) (void)cudaFreeHost(ptr_);
    ptr_ = nullptr;
    bytes_ = 0;
  }
  template <typename T = void>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace crosspoint::cuda
