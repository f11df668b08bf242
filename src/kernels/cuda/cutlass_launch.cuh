// Initialises and runs a CUTLASS GemmUniversalAdapter whose arguments passed can_implement,
// programmatically launched where the build's kernels wait for the kernel before them (what
// names the caller in its errors). Included only by the CUTLASS instantiation headers.
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "common/status.h"
#include "cutlass/cutlass.h"
#include "kernels/cuda/programmatic_launch.cuh"

namespace crosspoint::cuda {

template <typename Gemm>
Status launch_cutlass_gemm(Gemm& gemm, const typename Gemm::Arguments& args, cudaStream_t stream, const char* what) {
  if (gemm.initialize(args, nullptr, stream) != cutlass::Status::kSuccess)
    return internal_error(std::string(what) + ": CUTLASS initialize failed");
#if defined(CUTLASS_ENABLE_GDC_FOR_SM90)
  const bool programmatic = programmatic_launch_enabled();
#else
  const bool programmatic = false;  // the kernel would not wait for the one before it
#endif
  const cutlass::Status status = gemm.run(stream, nullptr, programmatic);
  if (status != cutlass::Status::kSuccess) {
    return internal_error(std::string(what) + ": launch failed: " + cutlassGetStatusString(status) + ", " +
                          cudaGetErrorString(cudaGetLastError()));
  }
  return Status::ok();
}

}  // namespace crosspoint::cuda
