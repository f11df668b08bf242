// Internal to the W4A16 kernels (w4a16_gemv.cu, w4a16_gemm_large.cu, w4a16_gemm_wgmma.cu) and the
// decode attention kernel (paged_attention_decode_mma.cu): the cp.async copies of their shared-memory
// pipelines, the ldmatrix read of activation fragments, the split handshake of the attention
// merge and the host's choice of the wgmma kernel's K split. Not a public API.
#pragma once

#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <limits>

namespace crosspoint::cuda::w4a16_internal {

// 16-byte global -> shared copy that bypasses L1 (.cg): weights and activations are read once.
__device__ __forceinline__ void cp_async_16(void* smem_dst, const void* global_src) {
  const uint32_t dst = static_cast<uint32_t>(__cvta_generic_to_shared(smem_dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(global_src));
}
// 16-byte global -> shared copy through L1 (.ca), to a shared-window address
// (__cvta_generic_to_shared): for data many blocks of an SM read, such as a GEMV's activations.
__device__ __forceinline__ void cp_async_16_l1(uint32_t smem_dst, const void* global_src) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 16;\n" ::"r"(smem_dst), "l"(global_src));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
// Waits until at most kPending of this thread's committed copy groups are still in flight.
template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending));
}

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
// The same from a shared-window address.
__device__ __forceinline__ void ldmatrix_x4(uint32_t r[4], uint32_t smem_row_piece) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_row_piece));
}

// After a block has written its partial result: true in every thread of the one block that
// finished this tile last (which then reads the others' results back). The fences make every
// block's writes visible before its counter increment, and the other blocks' writes visible to
// the last one. Call from all threads of the block.
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

// Host: the K split for `tiles` output tiles of `num_k_chunks` 64-deep chunks each on
// num_sms x blocks_per_sm slots. Estimated run, in chunk-times of one block while the GPU is
// full: the number of waves of blocks times each block's chunks, plus split_cost_chunks for
// the split epilogue (the reduction of the partial sums) of split runs. Each
// split keeps >= 4 chunks so its pipeline overlaps, and there are at most split_limit splits;
// ties go to fewer splits (less reduction traffic). tiles_per_wave[s], when given (s = 1 ..
// split_limit), is how many tiles split s ways are resident at once (thread-block clusters of
// s blocks pack into the GPU's processing clusters less densely than single blocks).
inline int plan_k_splits(int64_t tiles, int num_k_chunks, int num_sms, int blocks_per_sm, double split_cost_chunks,
                         int split_limit = 32, const int* tiles_per_wave = nullptr) {
  const int64_t slots = static_cast<int64_t>(std::max(1, num_sms)) * std::max(1, blocks_per_sm);
  const int max_splits = std::max(1, std::min(num_k_chunks / 4, split_limit));
  double best_cost = std::numeric_limits<double>::infinity();
  int best = 1;
  for (int splits = 1; splits <= max_splits; ++splits) {
    const int64_t per_wave = tiles_per_wave != nullptr ? std::max(1, tiles_per_wave[splits]) : 0;
    const int64_t waves = per_wave > 0 ? (tiles + per_wave - 1) / per_wave : (tiles * splits + slots - 1) / slots;
    const int chunks_per_block = (num_k_chunks + splits - 1) / splits;
    const double cost = static_cast<double>(waves) * (chunks_per_block + (splits > 1 ? split_cost_chunks : 0.0));
    if (cost < best_cost - 1e-9) {
      best_cost = cost;
      best = splits;
    }
  }
  return best;
}

}  // namespace crosspoint::cuda::w4a16_internal
