// The instantiations behind cutlass_fp8_block_gemm (cutlass_fp8_block_gemm.h), one per token
// tile, each in its own cutlass_fp8_block_gemm_<tokens>.cu (kUnsupported in builds without
// sm_90a). Internal to the kernels folder.
#pragma once

#include <cuda_runtime.h>

#include "common/status.h"
#include "kernels/cuda/cutlass_fp8_block_gemm.h"

namespace crosspoint::cuda::cutlass_fp8_block {

// num_sms: the SMs the persistent kernel spreads over.
Status gemm_64x16(const CutlassFp8BlockArgs& args, int num_sms, cudaStream_t stream);
Status gemm_64x32(const CutlassFp8BlockArgs& args, int num_sms, cudaStream_t stream);
Status gemm_64x64(const CutlassFp8BlockArgs& args, int num_sms, cudaStream_t stream);
Status gemm_64x128(const CutlassFp8BlockArgs& args, int num_sms, cudaStream_t stream);

}  // namespace crosspoint::cuda::cutlass_fp8_block
