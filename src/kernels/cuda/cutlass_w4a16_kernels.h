// The instantiations behind cutlass_w4a16_gemm (cutlass_w4a16_gemm.h), one per tile in
// cutlass_w4a16_gemm_<tile>.cu (built only for 90a; elsewhere kUnsupported). Internal to the
// kernels folder.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "common/status.h"

namespace crosspoint::cuda::cutlass_w4a16 {

struct Args {
  const uint16_t* x;         // [M, K] fp16, row stride x_stride elements
  int64_t x_stride;
  const uint8_t* weight;     // CUTLASS's reordered int4 layout of [N, K]
  const uint16_t* scales;    // [K / G][N] fp16
  void* out;                 // fp16 y [M, N] (k_splits == 1) or fp32 partials [k_splits][M, N]
  int64_t out_stride;        // elements between token rows of out
  int64_t out_split_stride;  // elements between K slices of out
  int m, n, k, group_size, k_splits;  // each K slice a whole number of groups and of 64-deep k-blocks
  bool check_only = false;  // only ask CUTLASS whether it can run these sizes (host; no GPU needed)
};

Status gemm_64x16(const Args& args, bool fp32_partials, cudaStream_t stream);
Status gemm_64x32(const Args& args, bool fp32_partials, cudaStream_t stream);
Status gemm_64x64(const Args& args, bool fp32_partials, cudaStream_t stream);
Status gemm_128x128(const Args& args, cudaStream_t stream);

// The element offset of (n, k) in K slice `slice` of an [N, slices * k_slice] weight in the
// reordered layout (host; tests check that slice l's offsets are the whole weight's at k + l * k_slice).
int64_t reordered_offset(int n, int k, int slice, int num_out, int k_slice, int slices);

}  // namespace crosspoint::cuda::cutlass_w4a16
