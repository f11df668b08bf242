// cutlass_fp8_gemm's 128-channel x 128-token tile, K in steps of 128 bytes, on persistent
// cooperative CTAs (each consumer warpgroup takes 64 of the 128 channels).
#include "kernels/cuda/cutlass_fp8_kernels.h"

#if defined(CROSSPOINT_CUTLASS_SM90)
#include "kernels/cuda/cutlass_fp8_gemm.cuh"
#endif

namespace crosspoint::cuda::cutlass_fp8 {

Status gemm_cooperative_128x128(const Args& args, cudaStream_t stream) {
#if defined(CROSSPOINT_CUTLASS_SM90)
  return run<SwappedGemm<128, 128, 128, Schedule::kCooperative>>(args, stream);
#else
  return unsupported("cutlass_fp8_gemm: this build has no sm_90a kernels (CMAKE_CUDA_ARCHITECTURES without 90a)");
#endif
}

}  // namespace crosspoint::cuda::cutlass_fp8
