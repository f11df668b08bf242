// cutlass_fp8_gemm's 128-channel x 256-token tile, K in steps of 128 bytes, on persistent
// cooperative CTAs with CUTLASS's stream-K schedule.
#include "kernels/cuda/cutlass_fp8_kernels.h"

#if defined(CROSSPOINT_CUTLASS_SM90) && defined(CROSSPOINT_CUTLASS_CANDIDATES)
// CUTLASS 4.2's stream-K scheduler does not compile with grid dependency control (a const
// member function binds a member to a non-const reference), so these launch without it.
#undef CUTLASS_ENABLE_GDC_FOR_SM90
#include "kernels/cuda/cutlass_fp8_gemm.cuh"
#endif

namespace crosspoint::cuda::cutlass_fp8 {

Status gemm_streamk_128x256(const Args& args, cudaStream_t stream) {
#if defined(CROSSPOINT_CUTLASS_SM90) && defined(CROSSPOINT_CUTLASS_CANDIDATES)
  return run<SwappedGemm<128, 256, 128, Schedule::kStreamK>>(args, stream);
#else
  return unsupported(
      "cutlass_fp8_gemm: this kernel is a candidate, built only with -DCROSSPOINT_CUTLASS_CANDIDATES=ON");
#endif
}

}  // namespace crosspoint::cuda::cutlass_fp8
