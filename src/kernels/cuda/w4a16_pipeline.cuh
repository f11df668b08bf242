// Internal to the W4A16 GEMM kernels (w4a16_gemm.cu, w4a16_gemm_large.cu): the cp.async
// copies of their shared-memory pipelines, the ldmatrix read of activation fragments and the
// split-K handshake.
// Not a public API.
#pragma once

#include <cstdint>

namespace crosspoint::cuda::w4a16_internal {

// 16-byte global -> shared copy that bypasses L1 (.cg): weights and activations are read once.
__device__ __forceinline__ void cp_async_16(void* smem_dst, const void* global_src) {
  const uint32_t dst = static_cast<uint32_t>(__cvta_generic_to_shared(smem_dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(global_src));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
// Waits until at most kPending of this thread's committed copy groups are still in flight.
template <int kPending>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending)); }

// The mma.m16n8k16 A fragment (row-major 16x16 fp16 tile) in one instruction. Each lane
// passes the address of one 16-byte row piece: lane l -> tile row l % 16, columns
// (l / 16) * 8 .. +7, which makes r[0..3] = (rows 0-7, k 0-7), (rows 8-15, k 0-7),
// (rows 0-7, k 8-15), (rows 8-15, k 8-15): the a0..a3 order the mma expects.
__device__ __forceinline__ void ldmatrix_x4(uint32_t r[4], const void* smem_row_piece) {
  const uint32_t addr = static_cast<uint32_t>(__cvta_generic_to_shared(smem_row_piece));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

// Split-K: after a block has added its partial sums to the fp32 workspace, true in every thread
// of the one block that finished this tile last (which then reads the sums back and clears
// them). The fences make every block's atomics visible before its counter increment, and the
// other blocks' sums visible to the last one. Call from all threads of the block.
__device__ __forceinline__ bool last_split_block_of_tile(int* tile_counters, int tile, int splits) {
  __shared__ int is_last_block;
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) is_last_block = atomicAdd(tile_counters + tile, 1) == splits - 1;
  __syncthreads();
  if (!is_last_block) return false;
  __threadfence();
  return true;
}

}  // namespace crosspoint::cuda::w4a16_internal
