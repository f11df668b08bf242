// cutlass_int8_gemm's 128-channel x 256-token tile, K in steps of 128 bytes, on persistent
// cooperative CTAs (each consumer warpgroup takes 64 of the 128 channels).
#include "kernels/cuda/cutlass_fp8_kernels.h"

#if defined(CROSSPOINT_CUTLASS_SM90)
#include "kernels/cuda/cutlass_fp8_gemm.cuh"
#endif

namespace crosspoint::cuda::cutlass_fp8 {

Status int8_gemm_cooperative_128x256(const Args& args, cudaStream_t stream) {
#if defined(CROSSPOINT_CUTLASS_SM90)
  return run<SwappedGemm<128, 256, 128, Schedule::kCooperative, int8_t>>(args, stream);
#else
  return unsupported("cutlass_int8_gemm: this build has no sm_90a kernels (CMAKE_CUDA_ARCHITECTURES without 90a)");
#endif
}

}  // namespace crosspoint::cuda::cutlass_fp8
