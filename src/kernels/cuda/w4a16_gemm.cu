// W4A16 GEMM kernel: int4 weights and the activation tile stream through a 4-stage cp.async
// shared-memory pipeline (16-byte copies), are dequantised in registers with the
// magic-number trick and multiplied on tensor cores (mma.sync m16n8k16, fp32 accumulation).
// The 4 warps of a block sit side by side in n and share each staged activation tile. K is
// split across blocks when there are too few n tiles to fill the GPU; the partial sums meet
// in an fp32 workspace, and the last block to finish a tile writes it and clears the
// workspace. Layout: w4a16_gemm.h.
#include <cuda_fp16.h>

#include <algorithm>
#include <string>

#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/device_info.h"
#include "kernels/cuda/w4a16_fragments.cuh"
#include "kernels/cuda/w4a16_gemm.h"
#include "kernels/cuda/w4a16_gemv.h"
#include "kernels/cuda/w4a16_pipeline.cuh"

namespace crosspoint::cuda {
namespace {

using w4a16_internal::cp_async_16;
using w4a16_internal::cp_async_commit;
using w4a16_internal::cp_async_wait;
using w4a16_internal::dequant_word;
using w4a16_internal::mma_m16n8k16;

// Above the GEMV's rows w4a16_gemm runs the Hopper wgmma kernel (kWgmma) on compute capability
// 9.0 devices: it adds its split-K partials in cluster rank order, so its output is the same
// bits every run, where the mma.sync kernel's split K adds them with fp32 atomics in whatever
// order blocks finish (docs/cuda.md, "Determinism"). Elsewhere the mma.sync kernel runs
// unsplit (kLargeTileUnsplit) for the same reason.
// K from which the wgmma kernel refuses (its float scale-group index; w4a16_gemm_wgmma.cu).
constexpr int kWgmmaMaxK = 1 << 27;

constexpr int kWarps = 4;        // warps per block, side by side in n
constexpr int kChunkK = 64;      // input rows per packed chunk (4 mma k-steps)
constexpr int kARowStride = 72;  // fp16 per staged activation row: 144 B keeps 16-byte
                                 // alignment and makes fragment reads bank-conflict free

// One pipeline stage: everything the block needs for one 64-deep k chunk.
template <int kMTiles, int kNBlocks>
struct Stage {
  uint4 weight[kWarps * kNBlocks][32];    // packed int4, one 16-byte word group per lane
  uint32_t scales[kWarps * kNBlocks][8];  // half2 (s[c], s[c+8]) per n16 block
  uint16_t a[kMTiles * 16][kARowStride];  // activation rows m0.. of the chunk, fp16
};

// Block: kWarps warps side by side in n (warp w owns n16 blocks nb0 + w*kNBlocks + b), all
// on the same k chunk, so the activation tile is staged once per block; kStages-deep
// cp.async pipeline over the block's slice of k chunks.
// grid = (ceil(N/16 / (kWarps*kNBlocks)), k splits, ceil(M / (16*kMTiles))).
template <int kMTiles, int kNBlocks, int kStages>
__global__ void __launch_bounds__(kWarps * 32)
    w4a16_gemm_kernel(const uint16_t* __restrict__ x, int64_t x_stride, const uint4* __restrict__ packed_weight,
                      const uint32_t* __restrict__ packed_scales, uint16_t* __restrict__ y, int64_t y_stride, int m,
                      int n, int k, int group_size, float* __restrict__ split_sums, int* __restrict__ tile_counters) {
  using StageT = Stage<kMTiles, kNBlocks>;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  StageT* stages = reinterpret_cast<StageT*>(smem_raw);
  const int tid = threadIdx.x;
  const int lane = tid % 32;
  const int warp = tid / 32;
  const int num_n_blocks = n / 16;
  const int num_k_chunks = k / kChunkK;
  const int nb0 = blockIdx.x * kWarps * kNBlocks;
  const int m0 = blockIdx.z * kMTiles * 16;
  const int rows = min(kMTiles * 16, m - m0);  // valid activation rows of this block
  const int splits = gridDim.y;
  const int kc_begin = static_cast<int>(static_cast<int64_t>(num_k_chunks) * blockIdx.y / splits);
  const int kc_end = static_cast<int>(static_cast<int64_t>(num_k_chunks) * (blockIdx.y + 1) / splits);
  const int num_chunks = kc_end - kc_begin;

  // Issues the cp.async copies of chunk kc into stage st (all threads take part).
  auto load_stage = [&](int st, int kc) {
    StageT& dst = stages[st];
    for (int piece = tid; piece < kWarps * kNBlocks * 32; piece += kWarps * 32) {
      const int nbl = piece / 32;
      const int nb = min(nb0 + nbl, num_n_blocks - 1);  // tail blocks copy a valid block, never stored
      cp_async_16(&dst.weight[nbl][piece % 32],
                  packed_weight + (static_cast<int64_t>(nb) * num_k_chunks + kc) * 32 + piece % 32);
    }
    const int group = kc * kChunkK / group_size;
    if (tid < kWarps * kNBlocks * 2) {
      const int nbl = tid / 2;
      const int nb = min(nb0 + nbl, num_n_blocks - 1);
      cp_async_16(&dst.scales[nbl][(tid % 2) * 4],
                  packed_scales + (static_cast<int64_t>(group) * num_n_blocks + nb) * 8 + (tid % 2) * 4);
    }
    for (int piece = tid; piece < rows * 8; piece += kWarps * 32) {
      const int r = piece / 8, c = (piece % 8) * 8;
      cp_async_16(&dst.a[r][c], x + static_cast<int64_t>(m0 + r) * x_stride + kc * kChunkK + c);
    }
  };

  float acc[kMTiles][kNBlocks][2][4] = {};
  const int frag_row = lane / 4;        // A/C fragment row within an m16 tile
  const int frag_col = (lane % 4) * 2;  // A fragment k offset / C fragment column offset

#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < num_chunks) load_stage(s, kc_begin + s);
    cp_async_commit();
  }
  for (int i = 0; i < num_chunks; ++i) {
    cp_async_wait<kStages - 2>();
    __syncthreads();  // chunk i has landed for everyone; stage (i-1) % kStages is free again
    if (i + kStages - 1 < num_chunks) load_stage((i + kStages - 1) % kStages, kc_begin + i + kStages - 1);
    cp_async_commit();
    const StageT& st = stages[i % kStages];
    uint4 w[kNBlocks];
    half2 scale[kNBlocks][2];
#pragma unroll
    for (int b = 0; b < kNBlocks; ++b) {
      w[b] = st.weight[warp * kNBlocks + b][lane];
      const uint32_t sp = st.scales[warp * kNBlocks + b][lane / 4];
      const half2 pair = *reinterpret_cast<const half2*>(&sp);
      scale[b][0] = __low2half2(pair);
      scale[b][1] = __high2half2(pair);
    }
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      uint32_t a[kMTiles][4];
#pragma unroll
      for (int t = 0; t < kMTiles; ++t) {
        // Rows >= m hold stale data; they only feed output rows that are never stored.
        const uint16_t* r0 = &st.a[t * 16 + frag_row][j * 16 + frag_col];
        const uint16_t* r8 = &st.a[t * 16 + frag_row + 8][j * 16 + frag_col];
        a[t][0] = *reinterpret_cast<const uint32_t*>(r0);
        a[t][1] = *reinterpret_cast<const uint32_t*>(r8);
        a[t][2] = *reinterpret_cast<const uint32_t*>(r0 + 8);
        a[t][3] = *reinterpret_cast<const uint32_t*>(r8 + 8);
      }
#pragma unroll
      for (int b = 0; b < kNBlocks; ++b) {
        const uint32_t word = j == 0 ? w[b].x : j == 1 ? w[b].y : j == 2 ? w[b].z : w[b].w;
        half2 frag[4];
        dequant_word(word, frag);
        frag[0] = __hmul2(frag[0], scale[b][0]);
        frag[1] = __hmul2(frag[1], scale[b][0]);
        frag[2] = __hmul2(frag[2], scale[b][1]);
        frag[3] = __hmul2(frag[3], scale[b][1]);
        const uint32_t* f = reinterpret_cast<const uint32_t*>(frag);
#pragma unroll
        for (int t = 0; t < kMTiles; ++t) {
          mma_m16n8k16(acc[t][b][0], a[t], f[0], f[1]);
          mma_m16n8k16(acc[t][b][1], a[t], f[2], f[3]);
        }
      }
    }
  }
  cp_async_wait<0>();

  // Each warp owns distinct output columns: store (one split) or accumulate in fp32.
  const bool single_split = splits == 1;
#pragma unroll
  for (int t = 0; t < kMTiles; ++t)
#pragma unroll
    for (int b = 0; b < kNBlocks; ++b)
#pragma unroll
      for (int h = 0; h < 2; ++h)
#pragma unroll
        for (int r = 0; r < 4; ++r) {
          const int row = m0 + t * 16 + frag_row + (r >= 2 ? 8 : 0);
          const int col = (nb0 + warp * kNBlocks + b) * 16 + h * 8 + frag_col + (r & 1);
          if (row >= m || col >= n) continue;
          if (single_split) {
            y[row * y_stride + col] = __half_as_ushort(__float2half_rn(acc[t][b][h][r]));
          } else {
            atomicAdd(split_sums + static_cast<int64_t>(row) * n + col, acc[t][b][h][r]);
          }
        }
  if (single_split) return;

  // The last block to finish this tile writes it out and clears the scratch for next time.
  const int tile = blockIdx.z * gridDim.x + blockIdx.x;
  if (!w4a16_internal::last_split_block_of_tile(tile_counters, tile, splits)) return;
  const int cols = kWarps * kNBlocks * 16;
  for (int e = tid; e < rows * cols; e += kWarps * 32) {
    const int row = m0 + e / cols, col = nb0 * 16 + e % cols;
    if (col >= n) continue;
    const float sum = atomicExch(split_sums + static_cast<int64_t>(row) * n + col, 0.f);
    y[row * y_stride + col] = __half_as_ushort(__float2half_rn(sum));
  }
  if (tid == 0) tile_counters[tile] = 0;
}

__global__ void permute_columns_kernel(const uint16_t* __restrict__ x, const int32_t* __restrict__ k_perm,
                                       uint16_t* __restrict__ x_out, int k) {
  const int row = blockIdx.y;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < k; i += gridDim.x * blockDim.x) {
    x_out[static_cast<int64_t>(row) * k + i] = x[static_cast<int64_t>(row) * k + k_perm[i]];
  }
}

template <int kMTiles, int kNBlocks, int kStages>
Status launch(const uint16_t* x, int64_t x_stride, const uint32_t* packed_weight, const uint32_t* packed_scales,
              uint16_t* y, int64_t y_stride, int m, int n, int k, int group_size, void* workspace, int blocks_per_sm,
              cudaStream_t stream) {
  constexpr size_t kSmemBytes = sizeof(Stage<kMTiles, kNBlocks>) * kStages;
  static const cudaError_t attr_status =
      cudaFuncSetAttribute(w4a16_gemm_kernel<kMTiles, kNBlocks, kStages>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                           static_cast<int>(kSmemBytes));
  CROSSPOINT_CUDA_RETURN_IF_ERROR(attr_status, "w4a16_gemm shared memory attribute");
  const int grid_n = (n / 16 + kWarps * kNBlocks - 1) / (kWarps * kNBlocks);
  const int grid_m = (m + kMTiles * 16 - 1) / (kMTiles * 16);
  const int num_k_chunks = k / kChunkK;
  // About blocks_per_sm blocks per SM in flight, each keeping >= 2 chunks so its pipeline overlaps.
  const int target_blocks = cuda_device_info().num_sms * blocks_per_sm;
  int splits = (target_blocks + grid_n * grid_m - 1) / (grid_n * grid_m);
  splits = std::max(1, std::min(splits, num_k_chunks / 2));
  float* split_sums = static_cast<float*>(workspace);
  int* tile_counters = reinterpret_cast<int*>(split_sums + static_cast<int64_t>(m) * n);
  const dim3 grid(grid_n, splits, grid_m);
  w4a16_gemm_kernel<kMTiles, kNBlocks, kStages><<<grid, kWarps * 32, kSmemBytes, stream>>>(
      x, x_stride, reinterpret_cast<const uint4*>(packed_weight), packed_scales, y, y_stride, m, n, k, group_size,
      split_sums, tile_counters);
  return last_launch_status("w4a16_gemm launch");
}

}  // namespace

size_t w4a16_workspace_bytes(int max_m, int n) {
  // Split sums [M, N] fp32, then one counter per (m16 tile, n16 block) at most. Launches with
  // fewer rows place the counters earlier; that is safe because every launch leaves all of
  // it zero, and fp32 0 and int 0 are the same bits.
  const size_t sums = static_cast<size_t>(max_m) * n * sizeof(float);
  const size_t tiles = static_cast<size_t>((max_m + 15) / 16) * (n / 16);
  return sums + tiles * sizeof(int);
}

Status w4a16_gemm(const uint16_t* x, int64_t x_stride, const uint32_t* packed_weight, const uint32_t* packed_scales,
                  uint16_t* y, int64_t y_stride, int m, int n, int k, int group_size, void* workspace,
                  cudaStream_t stream) {
  // Small batches: the register-streaming kernel (no workspace, deterministic).
  if (m >= 1 && m <= kW4A16GemvMaxRows) {
    return w4a16_gemv(x, x_stride, packed_weight, packed_scales, y, y_stride, m, n, k, group_size, stream);
  }
  W4A16Tuning tuning = w4a16_default_tuning_for(m);
  // The rare odd width, or a K beyond the wgmma kernel's limit: the mma.sync kernel.
  if (tuning == W4A16Tuning::kWgmma && (n % 64 != 0 || k >= kWgmmaMaxK)) tuning = W4A16Tuning::kLargeTileUnsplit;
  return w4a16_gemm_tuned(tuning, x, x_stride, packed_weight, packed_scales, y, y_stride, m, n, k, group_size,
                          workspace, stream);
}

W4A16Tuning w4a16_default_tuning_for(int m) {
  // Above the GEMV's rows: the Hopper wgmma kernel where the device has it, else the
  // larger-batch mma.sync kernel without K splits (both deterministic; see the top).
  if (m <= kW4A16GemvMaxRows) return W4A16Tuning::kDefault;
  return w4a16_wgmma_supported() ? W4A16Tuning::kWgmma : W4A16Tuning::kLargeTileUnsplit;
}

Status w4a16_gemm_tuned(W4A16Tuning tuning, const uint16_t* x, int64_t x_stride, const uint32_t* packed_weight,
                        const uint32_t* packed_scales, uint16_t* y, int64_t y_stride, int m, int n, int k,
                        int group_size, void* workspace, cudaStream_t stream) {
  if (m <= 0) return m == 0 ? Status::ok() : invalid_argument("w4a16_gemm: m = " + std::to_string(m));
  if (k <= 0 || k % kChunkK != 0)
    return unsupported("w4a16_gemm: k = " + std::to_string(k) + " is not a positive multiple of 64");
  if (n <= 0 || n % 16 != 0)
    return unsupported("w4a16_gemm: n = " + std::to_string(n) + " is not a positive multiple of 16");
  const bool wgmma = tuning == W4A16Tuning::kWgmma;
  if (wgmma && n % 64 != 0) {
    return unsupported("w4a16_gemm: n = " + std::to_string(n) +
                       " is not a multiple of 64, which the wgmma tuning needs");
  }
  if (group_size == -1) group_size = k;
  if (group_size <= 0 || (group_size % kChunkK != 0 && group_size != k)) {
    return unsupported("w4a16_gemm: group_size " + std::to_string(group_size) + " is not a multiple of 64");
  }
  if (x_stride < k || x_stride % 8 != 0)
    return invalid_argument("w4a16_gemm: x_stride must be a multiple of 8 and >= k");
  if (y_stride < n) return invalid_argument("w4a16_gemm: y_stride must be >= n");
  if (x == nullptr || packed_weight == nullptr || packed_scales == nullptr || y == nullptr || workspace == nullptr) {
    return invalid_argument("w4a16_gemm: null pointer argument");
  }
  const bool float4_workspace = tuning == W4A16Tuning::kLargeTile || tuning == W4A16Tuning::kLargeTileUnsplit ||
                                tuning == W4A16Tuning::kLargeTileWide || wgmma;
  if (float4_workspace && reinterpret_cast<uintptr_t>(workspace) % 16 != 0) {
    return invalid_argument("w4a16_gemm: workspace must be 16-byte aligned (float4 read back of the split sums)");
  }
  if (wgmma) {
    return w4a16_gemm_wgmma(x, x_stride, packed_weight, packed_scales, y, y_stride, m, n, k, group_size, workspace,
                            W4A16WgmmaOptions{}, stream);
  }
  if (tuning == W4A16Tuning::kLargeTile || tuning == W4A16Tuning::kLargeTileUnsplit ||
      tuning == W4A16Tuning::kLargeTileWide) {
    W4A16LargeOptions options;
    if (tuning == W4A16Tuning::kLargeTileUnsplit) options.k_splits = 1;
    options.wide = tuning == W4A16Tuning::kLargeTileWide;
    return w4a16_gemm_large(x, x_stride, packed_weight, packed_scales, y, y_stride, m, n, k, group_size, workspace,
                            options, stream);
  }
  if (m > 16) {
    if (m <= 32)
      return launch<2, 4, 4>(x, x_stride, packed_weight, packed_scales, y, y_stride, m, n, k, group_size, workspace, 3,
                             stream);
    return launch<4, 2, 4>(x, x_stride, packed_weight, packed_scales, y, y_stride, m, n, k, group_size, workspace, 3,
                           stream);
  }
  switch (tuning) {
    case W4A16Tuning::kDeepPipeline:
      return launch<1, 4, 8>(x, x_stride, packed_weight, packed_scales, y, y_stride, m, n, k, group_size, workspace, 2,
                             stream);
    case W4A16Tuning::kNarrowBlocks:
      return launch<1, 2, 6>(x, x_stride, packed_weight, packed_scales, y, y_stride, m, n, k, group_size, workspace, 5,
                             stream);
    case W4A16Tuning::kMoreSplits:
      return launch<1, 4, 4>(x, x_stride, packed_weight, packed_scales, y, y_stride, m, n, k, group_size, workspace, 8,
                             stream);
    case W4A16Tuning::kDefault:
    default:
      return launch<1, 4, 4>(x, x_stride, packed_weight, packed_scales, y, y_stride, m, n, k, group_size, workspace, 3,
                             stream);
  }
}

Status w4a16_permute_columns(const uint16_t* x, const int32_t* k_perm, uint16_t* x_out, int m, int k,
                             cudaStream_t stream) {
  if (m <= 0 || k <= 0) return m == 0 ? Status::ok() : invalid_argument("w4a16_permute_columns: bad shape");
  const dim3 grid(std::min((k + 255) / 256, 64), m);
  permute_columns_kernel<<<grid, 256, 0, stream>>>(x, k_perm, x_out, k);
  return last_launch_status("w4a16_permute_columns launch");
}

}  // namespace crosspoint::cuda
