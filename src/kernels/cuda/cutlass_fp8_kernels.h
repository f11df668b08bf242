// The instantiations behind cutlass_fp8_gemm (cutlass_fp8_gemm.h): their argument block and
// one entry point per tile, each defined in its own cutlass_fp8_gemm_<tile>.cu (built only
// when the CUDA architectures include 90a; elsewhere they answer kUnsupported). Internal to
// the kernels folder; engines call cutlass_fp8_gemm.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "common/status.h"

namespace crosspoint::cuda::cutlass_fp8 {

// One GEMM (or batch of K slices) as the instantiations take it.
struct Args {
  const uint8_t* xq;      // [M, K] e4m3, row stride xq_stride bytes
  int64_t xq_stride;
  const float* x_scale;   // [M]
  const uint8_t* wq;      // [N, K] e4m3, row stride w_stride bytes
  int64_t w_stride;
  const float* w_scale;   // [N]
  void* out;              // fp16 y [M, N] (k_splits == 1) or fp32 partials [k_splits][M, N]
  int64_t out_stride;     // elements between token rows of out
  int64_t out_split_stride;  // elements between K slices of out (partials)
  int m, n, k, k_splits;  // k % k_splits == 0, (k / k_splits) % 16 == 0
  bool check_only = false;  // only ask CUTLASS whether it can run these sizes (host; no GPU needed)
};

// One declaration per instantiation (defined in cutlass_fp8_gemm_<tile>.cu).
Status gemm_64x16(const Args& args, bool fp32_partials, cudaStream_t stream);
Status gemm_64x32(const Args& args, bool fp32_partials, cudaStream_t stream);
Status gemm_64x64(const Args& args, bool fp32_partials, cudaStream_t stream);
Status gemm_128x128(const Args& args, cudaStream_t stream);

}  // namespace crosspoint::cuda::cutlass_fp8
