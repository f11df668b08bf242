// The instantiations behind cutlass_fp8_gemm and cutlass_int8_gemm (cutlass_fp8_gemm.h): their
// argument block and one entry point per tile and element type, each defined in its own cutlass_fp8_gemm_<tile>.cu
// (built only when the CUDA architectures include 90a; elsewhere they answer kUnsupported). Internal to the kernels
// folder; engines call cutlass_fp8_gemm.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "common/status.h"

namespace crosspoint::cuda::cutlass_fp8 {

struct Args {
  const uint8_t* xq;  // [M, K] e4m3 or int8, row stride xq_stride bytes
  int64_t xq_stride;
  const float* x_scale;  // [M]
  const uint8_t* wq;     // [N, K] e4m3 or int8, row stride w_stride bytes
  int64_t w_stride;
  const float* w_scale;  // [N]
  uint16_t* y;           // [M, N] fp16, row stride y_stride elements
  int64_t y_stride;
  int m, n, k;
  bool check_only = false;  // only ask CUTLASS whether it can run these sizes (host; no GPU needed)
  int num_sms = 0;          // SMs the persistent (ping-pong) kernels spread over
};

Status gemm_64x16(const Args& args, cudaStream_t stream);
Status gemm_64x32(const Args& args, cudaStream_t stream);
Status gemm_64x64(const Args& args, cudaStream_t stream);
Status gemm_64x128(const Args& args, cudaStream_t stream);
Status gemm_pingpong_64x16(const Args& args, cudaStream_t stream);
Status gemm_pingpong_64x32(const Args& args, cudaStream_t stream);
Status gemm_pingpong_64x64(const Args& args, cudaStream_t stream);

// The int8 twins (cutlass_int8_gemm): the same Args with int8 xq and wq, int32 sums, each in its
// own cutlass_int8_gemm_<tile>.cu; the cooperative tiles are int8's only.
Status int8_gemm_64x16(const Args& args, cudaStream_t stream);
Status int8_gemm_64x32(const Args& args, cudaStream_t stream);
Status int8_gemm_64x64(const Args& args, cudaStream_t stream);
Status int8_gemm_64x128(const Args& args, cudaStream_t stream);
Status int8_gemm_pingpong_64x16(const Args& args, cudaStream_t stream);
Status int8_gemm_pingpong_64x32(const Args& args, cudaStream_t stream);
Status int8_gemm_pingpong_64x64(const Args& args, cudaStream_t stream);
Status int8_gemm_cooperative_128x128(const Args& args, cudaStream_t stream);
Status int8_gemm_cooperative_128x256(const Args& args, cudaStream_t stream);

}  // namespace crosspoint::cuda::cutlass_fp8
