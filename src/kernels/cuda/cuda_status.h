// CUDA and cuBLASLt return codes turned into crosspoint Status values, for launchers.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <string>

#include "common/status.h"

namespace crosspoint::cuda {

// "cuda: w4a16_gemm launch: invalid configuration argument" style status, or ok.
inline Status cuda_status(cudaError_t err, const char* what) {
  if (err == cudaSuccess) return Status::ok();
  return internal_error(std::string("cuda: ") + what + ": " + cudaGetErrorString(err));
}

inline Status cublas_status(cublasStatus_t err, const char* what) {
  if (err == CUBLAS_STATUS_SUCCESS) return Status::ok();
  return internal_error(std::string("cublasLt: ") + what + ": status " + std::to_string(static_cast<int>(err)));
}

// The launch error of the kernel just enqueued (bad grid, missing image for this GPU).
inline Status last_launch_status(const char* kernel_name) { return cuda_status(cudaGetLastError(), kernel_name); }

}  // namespace crosspoint::cuda

#define CROSSPOINT_CUDA_RETURN_IF_ERROR(expr, what) \
  CROSSPOINT_RETURN_IF_ERROR(::crosspoint::cuda::cuda_status((expr), (what)))
#define CROSSPOINT_CUBLAS_RETURN_IF_ERROR(expr, what) \
  CROSSPOINT_RETURN_IF_ERROR(::crosspoint::cuda::cublas_status((expr), (what)))
