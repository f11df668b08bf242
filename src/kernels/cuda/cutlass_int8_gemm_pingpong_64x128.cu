// cutlass_int8_gemm's 64-channel x 128-token tile, K in steps of 256 bytes, on persistent
// ping-pong CTAs (one warpgroup's epilogue under the other's mainloop).
#include "kernels/cuda/cutlass_fp8_kernels.h"

#if defined(CROSSPOINT_CUTLASS_SM90)
#include "kernels/cuda/cutlass_fp8_gemm.cuh"
#endif

namespace crosspoint::cuda::cutlass_fp8 {

Status int8_gemm_pingpong_64x128(const Args& args, cudaStream_t stream) {
#if defined(CROSSPOINT_CUTLASS_SM90)
  return run<SwappedGemm<64, 128, 256, Schedule::kPingpong, int8_t>>(args, stream);
#else
  return unsupported("cutlass_int8_gemm: this build has no sm_90a kernels (CMAKE_CUDA_ARCHITECTURES without 90a)");
#endif
}

}  // namespace crosspoint::cuda::cutlass_fp8
