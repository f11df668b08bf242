// cutlass_w4a16_gemm's 64-channel x 32-token tile; fp16 out, or fp32 partial sums for a K split.
#include "kernels/cuda/cutlass_w4a16_kernels.h"

#if defined(CROSSPOINT_CUTLASS_SM90)
#include "kernels/cuda/cutlass_w4a16_gemm.cuh"
#endif

namespace crosspoint::cuda::cutlass_w4a16 {

Status gemm_64x32(const Args& args, bool fp32_partials, cudaStream_t stream) {
#if defined(CROSSPOINT_CUTLASS_SM90)
  if (fp32_partials) return run<SwappedGemm<64, 32, float>>(args, stream);
  return run<SwappedGemm<64, 32, cutlass::half_t>>(args, stream);
#else
  return unsupported("cutlass_w4a16_gemm: this build has no sm_90a kernels (CMAKE_CUDA_ARCHITECTURES without 90a)");
#endif
}

}  // namespace crosspoint::cuda::cutlass_w4a16
