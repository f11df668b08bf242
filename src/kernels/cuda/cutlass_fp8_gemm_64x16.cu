// cutlass_fp8_gemm's 64-channel x 16-token tile, K in steps of 256 bytes; fp16 out, or fp32
// partial sums for a K split.
#include "kernels/cuda/cutlass_fp8_kernels.h"

#if defined(CROSSPOINT_CUTLASS_SM90)
#include "kernels/cuda/cutlass_fp8_gemm.cuh"
#endif

namespace crosspoint::cuda::cutlass_fp8 {

Status gemm_64x16(const Args& args, bool fp32_partials, cudaStream_t stream) {
#if defined(CROSSPOINT_CUTLASS_SM90)
  if (fp32_partials) return run<SwappedGemm<64, 16, 256, float>>(args, stream);
  return run<SwappedGemm<64, 16, 256, cutlass::half_t>>(args, stream);
#else
  return unsupported("cutlass_fp8_gemm: this build has no sm_90a kernels (CMAKE_CUDA_ARCHITECTURES without 90a)");
#endif
}

}  // namespace crosspoint::cuda::cutlass_fp8
