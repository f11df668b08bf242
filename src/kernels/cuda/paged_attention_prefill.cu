// Causal prefill attention over the paged cache on tensor cores (FlashAttention-2 style),
// for the sequences of a batch with many new rows (params' tensor_core_min_rows).
//
//   CTA = (tile of 128 new rows, query head); 4 warps of 32 query rows, each in two m16 row
//   groups, so every K and V fragment read from shared memory feeds two MMAs. The tile's Q
//   rows are staged in shared memory once and read back as mma A fragments. The context
//   [0, last visible position of the tile) is walked in tiles of 64 positions: K and V rows
//   (found through the block table) go to shared memory in two stages, tile t + 1 copied
//   (cp.async) while tile t is multiplied (16 bytes of padding per row: conflict-free
//   fragment reads), then
//     S = Q K^T        mma.sync m16n8k16 (fp16 or bf16 in, fp32 accumulate), K as B fragments
//     causal mask, online softmax in fp32 (log2 domain, running max m and sum l per row)
//     O = O * alpha + P V   P (rounded to the activations' type, straight from the S
//                           accumulators) as A fragments, V via ldmatrix.trans as B fragments
//   and O / l is written in the activations' type. A warp skips the MMAs of a context tile
//   none of its rows sees and the mask of one all its rows see in full (a masked tile adds 0
//   and rescales by 1: the sums are the same either way). Positions past the tile's last
//   visible one are zero-filled in shared memory, so a garbage cache slot can never turn a
//   masked 0 into NaN. CTAs go out heaviest tile first across all heads and sequences (grid:
//   head fastest, then sequence, then tile rank).
// The one rounding the CUDA-core kernel does not have: P is rounded to fp16 (bf16) before P V
// (as FlashAttention does), an error of at most 2^-11 (2^-8) of sum(p |v|) / l per output.
#include <cuda_fp16.h>

#include <atomic>
#include <climits>
#include <string>

#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/programmatic_launch.cuh"
#include "kernels/cuda/paged_attention_mma.cuh"
#include "kernels/cuda/paged_attention_params.cuh"

namespace crosspoint::cuda::attention_internal {
namespace {

constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;
constexpr int kKvTile = 64;  // context positions per step
constexpr int kPad = 8;      // fp16 padding per shared-memory row (16 bytes)

// Four 8x8 fp16 matrices from shared memory (lanes 8i..8i+7 give the row addresses of matrix
// i); lane l receives row l/4, columns 2 (l%4) .. +1 of each: for K stored [position][dim],
// the B fragments (b0, b1) of two k-steps of Q K^T.
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const uint16_t* row_address) {
  const uint32_t address = static_cast<uint32_t>(__cvta_generic_to_shared(row_address));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address));
}

// 16 bytes global -> shared without passing through registers; zeros where !valid.
__device__ __forceinline__ void cp_async_16(uint16_t* smem, const void* gmem, bool valid) {
  const uint32_t address = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(address), "l"(gmem), "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending));
}

constexpr int kQueryTile = kWarps * 32;  // new rows per CTA
constexpr int kRowGroups = 2;            // m16 row groups per warp

// Four 8x8 fp16 matrices transposed (lanes 8i..8i+7 give the row addresses of matrix i): for
// V stored [position][dim], the B fragments (b0, b1) of P V for two adjacent 8-dim tiles.
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], const uint16_t* row_address) {
  const uint32_t address = static_cast<uint32_t>(__cvta_generic_to_shared(row_address));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address));
}

// The tile's 128 query rows into shared memory [row][dim] (row stride kHeadDim + kPad) through
// cp.async; rows past the sequence's last new row repeat that row (finite math, never stored).
template <int kHeadDim>
__device__ __forceinline__ void stage_query_tile(const Params& p, int first_row, int j0, int last_j, int head,
                                                 uint16_t* smem) {
  constexpr int kVecPerRow = kHeadDim / 8;
  constexpr int kLoads = kQueryTile * kVecPerRow / kThreads;
#pragma unroll
  for (int i = 0; i < kLoads; ++i) {
    const int v = threadIdx.x + i * kThreads;
    const int r = v / kVecPerRow, c = (v % kVecPerRow) * 8;
    const uint16_t* src =
        p.query + static_cast<int64_t>(first_row + min(j0 + r, last_j)) * p.query_stride + head * kHeadDim + c;
    cp_async_16(smem + r * (kHeadDim + kPad) + c, src, true);
  }
}

// Context positions kv0 .. kv0 + 63 of K and V into shared memory (zeros from `limit` on), each
// row's cache offset looked up once for both: an fp16 cache through cp.async (the caller
// commits and waits), an e4m3 one widened through registers.
template <int kHeadDim, bool kFp8>
__device__ __forceinline__ void stage_kv_tiles(const Params& p, const int32_t* table, int kv0, int limit,
                                               int64_t kv_head_offset, uint16_t* s_k, uint16_t* s_v) {
  constexpr int kVecPerRow = kHeadDim / 8;
  constexpr int kLoads = kKvTile * kVecPerRow / kThreads;
  static_assert(kKvTile * kVecPerRow % kThreads == 0, "whole loads per thread");
#pragma unroll
  for (int i = 0; i < kLoads; ++i) {
    const int v = threadIdx.x + i * kThreads;
    const int r = v / kVecPerRow, c = (v % kVecPerRow) * 8;
    const bool valid = kv0 + r < limit;
    const int64_t offset = valid ? cache_row_offset(p, table, kv0 + r) + kv_head_offset + c : 0;
    const int at = r * (kHeadDim + kPad) + c;
    if constexpr (kFp8) {
      const uint4 zero = make_uint4(0, 0, 0, 0);
      *reinterpret_cast<uint4*>(s_k + at) = valid ? load_cache8<true>(p.key_cache, offset) : zero;
      *reinterpret_cast<uint4*>(s_v + at) = valid ? load_cache8<true>(p.value_cache, offset) : zero;
    } else {
      cp_async_16(s_k + at, static_cast<const uint16_t*>(p.key_cache) + offset, valid);
      cp_async_16(s_v + at, static_cast<const uint16_t*>(p.value_cache) + offset, valid);
    }
  }
}

template <class E, int kHeadDim, bool kFp8>
__global__ void __launch_bounds__(kThreads) prefill_tensor_core_kernel(Params p, int num_query_tiles) {
  wait_for_prior_kernels();
  allow_dependent_launch();
  constexpr int kDimSteps = kHeadDim / 16;  // k-steps of Q K^T
  constexpr int kDimTiles = kHeadDim / 8;   // n-tiles of P V (output columns)
  constexpr int kPosTiles = kKvTile / 8;    // n-tiles of Q K^T
  constexpr int kPosSteps = kKvTile / 16;   // k-steps of P V
  constexpr int kRowStride = kHeadDim + kPad;
  constexpr int kTileElems = kKvTile * kRowStride;
  // Q [128][kRowStride], then two stages of K and V tiles: stage t % 2 holds context tile t.
  extern __shared__ __align__(16) uint16_t smem[];
  uint16_t* s_q = smem;
  uint16_t* s_kv = smem + kQueryTile * kRowStride;

  const int head = blockIdx.x % p.num_heads;
  const int rest = blockIdx.x / p.num_heads;
  const int s = rest % p.num_seqs;
  const int rank = rest / p.num_seqs;
  const int num_new = num_new_rows(p, s);
  if (num_new < p.tensor_core_min_rows) return;  // the decode kernels' rows
  const int kv_head = head / p.group_size;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int group = lane / 4, quad = lane % 4;  // mma fragment coordinates
  const int32_t* table = p.block_tables + static_cast<int64_t>(s) * p.max_blocks_per_seq;
  const int first_row = p.seq_token_start[s];
  const int cached = p.seq_context_len[s] - num_new;
  const int64_t kv_head_offset = static_cast<int64_t>(kv_head) * kHeadDim;

  for (int tile = num_query_tiles - 1 - rank; tile * kQueryTile < num_new; tile += num_query_tiles) {
    const int j0 = tile * kQueryTile;
    const int last_j = min(j0 + kQueryTile, num_new) - 1;
    const int tile_visible = cached + last_j + 1;
    // This warp's rows j0 + warp * 32 .. + 31; the fewest and most positions any of them sees.
    const int warp_row0 = j0 + warp * 32;
    const int warp_min_visible = cached + min(warp_row0, last_j) + 1;
    const int warp_max_visible = cached + min(warp_row0 + 31, last_j) + 1;

    float o[kRowGroups][kDimTiles][4];
#pragma unroll
    for (int g = 0; g < kRowGroups; ++g)
#pragma unroll
      for (int dt = 0; dt < kDimTiles; ++dt) o[g][dt][0] = o[g][dt][1] = o[g][dt][2] = o[g][dt][3] = 0.f;
    float m[kRowGroups][2], l[kRowGroups][2];
#pragma unroll
    for (int g = 0; g < kRowGroups; ++g) {
      m[g][0] = m[g][1] = -INFINITY;
      l[g][0] = l[g][1] = 0.f;
    }

    // Both stages and the Q tile are free here: every step, the previous query tile's last
    // included, ends with a barrier.
    const int num_kv_tiles = (tile_visible + kKvTile - 1) / kKvTile;
    stage_query_tile<kHeadDim>(p, first_row, j0, last_j, head, s_q);
    stage_kv_tiles<kHeadDim, kFp8>(p, table, 0, tile_visible, kv_head_offset, s_kv, s_kv + kTileElems);
    cp_async_commit();
    for (int t = 0; t < num_kv_tiles; ++t) {
      const int kv0 = t * kKvTile;
      const uint16_t* s_k = s_kv + (t % 2) * 2 * kTileElems;
      const uint16_t* s_v = s_k + kTileElems;
      if (t + 1 < num_kv_tiles) {
        uint16_t* next = s_kv + ((t + 1) % 2) * 2 * kTileElems;
        stage_kv_tiles<kHeadDim, kFp8>(p, table, kv0 + kKvTile, tile_visible, kv_head_offset, next, next + kTileElems);
        cp_async_commit();
        cp_async_wait<1>();  // tile t (and Q) have landed, tile t + 1 may still be on its way
      } else {
        cp_async_wait<0>();
      }
      __syncthreads();  // tile t visible to every thread

      // Else no row of this warp sees the tile (it would add 0), or the warp's rows are all
      // past the sequence's end (never stored).
      if (kv0 < warp_max_visible && warp_row0 <= last_j) {
        // S = Q K^T for the warp's 2 x 16 rows x 64 positions, k-step by k-step: the A fragments
        // of both row groups and the B fragments of all 8 position tiles, then 16 MMAs.
        float sc[kRowGroups][kPosTiles][4];
#pragma unroll
        for (int g = 0; g < kRowGroups; ++g)
#pragma unroll
          for (int nt = 0; nt < kPosTiles; ++nt) sc[g][nt][0] = sc[g][nt][1] = sc[g][nt][2] = sc[g][nt][3] = 0.f;
#pragma unroll 2  // fully unrolled, ptxas hoists every k-step's fragment loads and spills 60 % more
        for (int ks = 0; ks < kDimSteps; ++ks) {
          uint32_t a[kRowGroups][4];
#pragma unroll
          for (int g = 0; g < kRowGroups; ++g)  // rows lane % 16, dims ks * 16 + (lane / 16) * 8
            ldmatrix_x4(a[g], s_q + (warp * 32 + g * 16 + lane % 16) * kRowStride + ks * 16 + (lane / 16) * 8);
#pragma unroll
          for (int nt = 0; nt < kPosTiles; nt += 2) {
            // Matrices: positions nt*8.. and (nt+1)*8.. (lane / 16), dims ks*16 + 0-7 / 8-15 ((lane / 8) % 2).
            uint32_t b[4];
            ldmatrix_x4(b, s_k + ((nt + lane / 16) * 8 + lane % 8) * kRowStride + ks * 16 + ((lane / 8) % 2) * 8);
#pragma unroll
            for (int g = 0; g < kRowGroups; ++g) {
              E::mma_16816(sc[g][nt], a[g], b[0], b[1]);
              E::mma_16816(sc[g][nt + 1], a[g], b[2], b[3]);
            }
          }
        }

        // Scale, and the causal mask where some row of the warp does not see the whole tile:
        // a row sees positions below cached + min(row, last_j) + 1.
        if (kv0 + kKvTile <= warp_min_visible) {
#pragma unroll
          for (int g = 0; g < kRowGroups; ++g)
#pragma unroll
            for (int nt = 0; nt < kPosTiles; ++nt)
#pragma unroll
              for (int e = 0; e < 4; ++e) sc[g][nt][e] *= p.scale_log2;
        } else {
#pragma unroll
          for (int g = 0; g < kRowGroups; ++g) {
            const int seen_a = cached + min(warp_row0 + g * 16 + group, last_j) + 1 - kv0;
            const int seen_b = cached + min(warp_row0 + g * 16 + group + 8, last_j) + 1 - kv0;
#pragma unroll
            for (int nt = 0; nt < kPosTiles; ++nt) {
#pragma unroll
              for (int e = 0; e < 2; ++e) {
                const int position = nt * 8 + quad * 2 + e;  // from kv0
                sc[g][nt][e] = position < seen_a ? sc[g][nt][e] * p.scale_log2 : -INFINITY;
                sc[g][nt][2 + e] = position < seen_b ? sc[g][nt][2 + e] * p.scale_log2 : -INFINITY;
              }
            }
          }
        }
        // P as fp16 A fragments of P V (k-step ps from position tiles 2ps, 2ps + 1), packed as
        // soon as each row group's softmax step is done: half the registers of S.
        uint32_t pa[kRowGroups][kPosSteps][4];
#pragma unroll
        for (int g = 0; g < kRowGroups; ++g) {
          const SoftmaxRescale rescale = online_softmax_step(sc[g], m[g][0], m[g][1], l[g][0], l[g][1]);
#pragma unroll
          for (int dt = 0; dt < kDimTiles; ++dt) {
            o[g][dt][0] *= rescale.a;
            o[g][dt][1] *= rescale.a;
            o[g][dt][2] *= rescale.b;
            o[g][dt][3] *= rescale.b;
          }
#pragma unroll
          for (int ps = 0; ps < kPosSteps; ++ps) {
            pa[g][ps][0] = E::pack2(sc[g][2 * ps][0], sc[g][2 * ps][1]);
            pa[g][ps][1] = E::pack2(sc[g][2 * ps][2], sc[g][2 * ps][3]);
            pa[g][ps][2] = E::pack2(sc[g][2 * ps + 1][0], sc[g][2 * ps + 1][1]);
            pa[g][ps][3] = E::pack2(sc[g][2 * ps + 1][2], sc[g][2 * ps + 1][3]);
          }
        }

        // O += P V: each V fragment pair (two 8-dim tiles) read once for both row groups.
#pragma unroll
        for (int ps = 0; ps < kPosSteps; ++ps) {
          // Matrices: positions ps*16 + 0-7 / 8-15 ((lane / 8) % 2), dims dt*8.. and (dt+1)*8.. (lane / 16).
          const uint16_t* v_rows = s_v + (ps * 16 + ((lane / 8) % 2) * 8 + lane % 8) * kRowStride + (lane / 16) * 8;
#pragma unroll
          for (int dt = 0; dt < kDimTiles; dt += 2) {
            uint32_t b[4];
            ldmatrix_x4_trans(b, v_rows + dt * 8);
#pragma unroll
            for (int g = 0; g < kRowGroups; ++g) {
              E::mma_16816(o[g][dt], pa[g][ps], b[0], b[1]);
              E::mma_16816(o[g][dt + 1], pa[g][ps], b[2], b[3]);
            }
          }
        }
      }
      __syncthreads();  // stage t % 2 is read: the next step may refill it
    }

#pragma unroll
    for (int g = 0; g < kRowGroups; ++g) {
#pragma unroll
      for (int offset = 1; offset < 4; offset *= 2) {
        l[g][0] += __shfl_xor_sync(0xffffffffu, l[g][0], offset);
        l[g][1] += __shfl_xor_sync(0xffffffffu, l[g][1], offset);
      }
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int row = warp_row0 + g * 16 + group + half * 8;
        if (row >= num_new) continue;
        const float inv = 1.f / l[g][half] * p.v_scale;
        uint16_t* out = p.output + static_cast<int64_t>(first_row + row) * p.output_stride + head * kHeadDim + quad * 2;
#pragma unroll
        for (int dt = 0; dt < kDimTiles; ++dt)
          *reinterpret_cast<uint32_t*>(out + dt * 8) = E::pack2(o[g][dt][2 * half] * inv, o[g][dt][2 * half + 1] * inv);
      }
    }
  }
}

}  // namespace

bool prefill_tensor_core_supports(int head_dim) { return head_dim == 64 || head_dim == 128; }

namespace {

// The dynamic shared memory limit is raised once per kernel (a driver call), not at every launch.
Status raise_shared_limit(const void* kernel, size_t shared_bytes, std::atomic<bool>& raised, const char* what) {
  if (raised.load(std::memory_order_acquire)) return Status::ok();
  CROSSPOINT_CUDA_RETURN_IF_ERROR(
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(shared_bytes)), what);
  raised.store(true, std::memory_order_release);
  return Status::ok();
}

template <class E, int kHeadDim, bool kFp8>
Status launch_prefill(const Params& p, int max_query_len, cudaStream_t stream) {
  const int num_query_tiles = (max_query_len + kQueryTile - 1) / kQueryTile;
  const int64_t grid = static_cast<int64_t>(p.num_heads) * p.num_seqs * num_query_tiles;
  if (grid > INT_MAX)
    return invalid_argument("cuda_paged_attention: prefill grid too large (heads " + std::to_string(p.num_heads) +
                            " x sequences " + std::to_string(p.num_seqs) + " x query tiles " +
                            std::to_string(num_query_tiles) + ")");
  // Q (128 rows) and two stages of K and V tiles: 104,448 bytes at head_dim 128.
  const size_t shared_bytes = size_t{kQueryTile + 4 * kKvTile} * (kHeadDim + kPad) * sizeof(uint16_t);
  static std::atomic<bool> raised{false};
  CROSSPOINT_RETURN_IF_ERROR(
      raise_shared_limit(reinterpret_cast<const void*>(prefill_tensor_core_kernel<E, kHeadDim, kFp8>), shared_bytes,
                         raised, "prefill_tensor_core_kernel shared memory"));
  CROSSPOINT_CUDA_RETURN_IF_ERROR(
      launch_programmatic(prefill_tensor_core_kernel<E, kHeadDim, kFp8>, dim3(static_cast<unsigned>(grid)),
                          dim3(kThreads), shared_bytes, stream, p, num_query_tiles),
      "prefill_tensor_core_kernel launch");
  return last_launch_status("paged_attention prefill_tensor_core_kernel launch");
}

}  // namespace

Status launch_prefill_tensor_core(const Params& p, int max_query_len, cudaStream_t stream) {
  using F16 = Element16F16;
  using BF16 = Element16BF16;  // never with an fp8 cache (check_args)
  if (p.head_dim == 128)
    return p.bf16     ? launch_prefill<BF16, 128, false>(p, max_query_len, stream)
           : p.kv_fp8 ? launch_prefill<F16, 128, true>(p, max_query_len, stream)
                      : launch_prefill<F16, 128, false>(p, max_query_len, stream);
  if (p.head_dim == 64)
    return p.bf16     ? launch_prefill<BF16, 64, false>(p, max_query_len, stream)
           : p.kv_fp8 ? launch_prefill<F16, 64, true>(p, max_query_len, stream)
                      : launch_prefill<F16, 64, false>(p, max_query_len, stream);
  return invalid_argument("cuda_paged_attention: tensor-core prefill needs head_dim 64 or 128, got " +
                          std::to_string(p.head_dim));
}

}  // namespace crosspoint::cuda::attention_internal
