// cutlass_fp8_block_gemm's 64-channel x 32-token tile.
#include "kernels/cuda/cutlass_fp8_block_kernels.h"

#if defined(CROSSPOINT_CUTLASS_SM90)
#include "kernels/cuda/cutlass_fp8_block_gemm.cuh"
#endif

namespace crosspoint::cuda::cutlass_fp8_block {

Status gemm_64x32(const CutlassFp8BlockArgs& args, int num_sms, cudaStream_t stream) {
#if defined(CROSSPOINT_CUTLASS_SM90)
  return run<BlockScaledGemm<32>>(args, num_sms, stream);
#else
  (void)args;
  (void)num_sms;
  (void)stream;
  return unsupported("cutlass_fp8_block_gemm: this build has no sm_90a kernels (CMAKE_CUDA_ARCHITECTURES without 90a)");
#endif
}

}  // namespace crosspoint::cuda::cutlass_fp8_block
