// cutlass_w4a16_gemm's 128-channel x 128-token tile (cooperative: two consumer warpgroups),
// from 65 rows to prefill; fp16 out, never split along K.
#include "kernels/cuda/cutlass_w4a16_kernels.h"

#if defined(CROSSPOINT_CUTLASS_SM90)
#include "kernels/cuda/cutlass_w4a16_gemm.cuh"
#endif

namespace crosspoint::cuda::cutlass_w4a16 {

Status gemm_128x128(const Args& args, cudaStream_t stream) {
#if defined(CROSSPOINT_CUTLASS_SM90)
  return run<SwappedGemm<128, 128, cutlass::half_t>>(args, stream);
#else
  return unsupported("cutlass_w4a16_gemm: this build has no sm_90a kernels (CMAKE_CUDA_ARCHITECTURES without 90a)");
#endif
}

}  // namespace crosspoint::cuda::cutlass_w4a16
