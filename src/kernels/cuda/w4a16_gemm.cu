// W4A16 GEMM kernel: int4 weights streamed once from HBM straight into registers (16-byte
// loads, one chunk prefetched ahead), dequantised in registers with the magic-number trick,
// multiplied on tensor cores (mma.sync m16n8k16, fp32 accumulation). Split-K across the
// warps of a block (reduced in shared memory) and across blocks (reduced in an fp32
// workspace by the last block to finish each tile, which also clears it). Layout: w4a16_gemm.h.
//
// Why no shared-memory stage for the weights: every weight byte is used by exactly one warp,
// so staging it through shared memory would add traffic without reuse; latency is hidden by
// having many independent 16-byte loads in flight (register double buffer and enough blocks).
#include <cuda_fp16.h>

#include <algorithm>
#include <string>

#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/w4a16_gemm.h"

namespace crosspoint::cuda {
namespace {

constexpr int kWarps = 4;          // warps per block; they split the block's k range
constexpr int kChunkK = 64;        // input rows per packed chunk (4 mma k-steps)

// (a & b) | c in one lop3 instruction.
__device__ __forceinline__ uint32_t lop3_and_or(uint32_t a, uint32_t b, uint32_t c) {
  uint32_t r;
  asm volatile("lop3.b32 %0, %1, %2, %3, 0xEA;\n" : "=r"(r) : "r"(a), "r"(b), "r"(c));
  return r;
}

// One packed word -> four half2 B-fragment registers holding (q - 8), scale not applied.
// Out: [0] b0b1 of column half 0, [1] b2b3 of half 0, [2] b0b1 of half 1, [3] b2b3 of half 1.
__device__ __forceinline__ void dequant_word(uint32_t word, half2 out[4]) {
  constexpr uint32_t kLo = 0x000F000F, kHi = 0x00F000F0, kMagic = 0x64006400;
  const uint32_t lo0 = lop3_and_or(word, kLo, kMagic);
  const uint32_t hi0 = lop3_and_or(word, kHi, kMagic);
  const uint32_t shifted = word >> 8;
  const uint32_t lo1 = lop3_and_or(shifted, kLo, kMagic);
  const uint32_t hi1 = lop3_and_or(shifted, kHi, kMagic);
  const uint32_t k1032 = 0x64086408;  // half2(1032, 1032): 1024 + zero point 8
  const uint32_t k1_16 = 0x2C002C00;  // half2(1/16, 1/16)
  const uint32_t kM72 = 0xD480D480;   // half2(-72, -72) = -(1024/16 + 8)
  const half2 magic_sub = *reinterpret_cast<const half2*>(&k1032);
  const half2 sixteenth = *reinterpret_cast<const half2*>(&k1_16);
  const half2 minus72 = *reinterpret_cast<const half2*>(&kM72);
  out[0] = __hsub2(*reinterpret_cast<const half2*>(&lo0), magic_sub);
  out[1] = __hfma2(*reinterpret_cast<const half2*>(&hi0), sixteenth, minus72);
  out[2] = __hsub2(*reinterpret_cast<const half2*>(&lo1), magic_sub);
  out[3] = __hfma2(*reinterpret_cast<const half2*>(&hi1), sixteenth, minus72);
}

__device__ __forceinline__ void mma_m16n8k16(float acc[4], const uint32_t a[4], uint32_t b0,
                                             uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Streaming 16-byte weight load: read once, keep it out of L1.
__device__ __forceinline__ uint4 load_weight(const uint4* p) { return __ldcs(p); }

__device__ __forceinline__ uint32_t load_act_pair(const uint16_t* x, int64_t x_stride, int row,
                                                  int m, int col) {
  if (row >= m) return 0u;
  return __ldg(reinterpret_cast<const uint32_t*>(x + row * x_stride + col));
}

// Block: kWarps warps over [n0, n0 + 16*kNBlocks) x rows [m0, m0 + 16*kMTiles) x its slice
// of k chunks. grid = (ceil(N / (16*kNBlocks)), k splits, ceil(M / (16*kMTiles))).
template <int kMTiles, int kNBlocks>
__global__ void __launch_bounds__(kWarps * 32)
    w4a16_gemm_kernel(const uint16_t* __restrict__ x, int64_t x_stride,
                      const uint4* __restrict__ packed_weight,
                      const uint32_t* __restrict__ packed_scales, uint16_t* __restrict__ y,
                      int64_t y_stride, int m, int n, int k, int group_size,
                      float* __restrict__ split_sums, int* __restrict__ tile_counters) {
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  const int num_n_blocks = n / 16;
  const int num_k_chunks = k / kChunkK;
  const int nb0 = blockIdx.x * kNBlocks;
  const int m0 = blockIdx.z * kMTiles * 16;
  const int splits = gridDim.y;
  const int kc_begin = static_cast<int>(static_cast<int64_t>(num_k_chunks) * blockIdx.y / splits);
  const int kc_end = static_cast<int>(static_cast<int64_t>(num_k_chunks) * (blockIdx.y + 1) / splits);

  float acc[kMTiles][kNBlocks][2][4] = {};
  const int frag_row = lane / 4;           // A/C fragment row within an m16 tile
  const int frag_col = (lane % 4) * 2;     // A fragment k offset / C fragment column offset

  // Prefetch the first chunk of this warp.
  uint4 w_cur[kNBlocks], w_next[kNBlocks];
  int kc = kc_begin + warp;
  auto load_chunk = [&](int chunk, uint4 out[kNBlocks]) {
#pragma unroll
    for (int b = 0; b < kNBlocks; ++b) {
      const int nb = min(nb0 + b, num_n_blocks - 1);  // clamp: tail blocks compute junk, not stored
      out[b] = load_weight(packed_weight + (static_cast<int64_t>(nb) * num_k_chunks + chunk) * 32 + lane);
    }
  };
  if (kc < kc_end) load_chunk(kc, w_cur);

  for (; kc < kc_end; kc += kWarps) {
    if (kc + kWarps < kc_end) load_chunk(kc + kWarps, w_next);
    const int group = kc * kChunkK / group_size;
    half2 scale[kNBlocks][2];
#pragma unroll
    for (int b = 0; b < kNBlocks; ++b) {
      const int nb = min(nb0 + b, num_n_blocks - 1);
      const uint32_t s = __ldg(packed_scales + (static_cast<int64_t>(group) * num_n_blocks + nb) * 8 + lane / 4);
      const half2 pair = *reinterpret_cast<const half2*>(&s);
      scale[b][0] = __low2half2(pair);
      scale[b][1] = __high2half2(pair);
    }
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int kk = kc * kChunkK + j * 16 + frag_col;
      uint32_t a[kMTiles][4];
#pragma unroll
      for (int t = 0; t < kMTiles; ++t) {
        const int row = m0 + t * 16 + frag_row;
        a[t][0] = load_act_pair(x, x_stride, row, m, kk);
        a[t][1] = load_act_pair(x, x_stride, row + 8, m, kk);
        a[t][2] = load_act_pair(x, x_stride, row, m, kk + 8);
        a[t][3] = load_act_pair(x, x_stride, row + 8, m, kk + 8);
      }
#pragma unroll
      for (int b = 0; b < kNBlocks; ++b) {
        const uint32_t word = j == 0 ? w_cur[b].x : j == 1 ? w_cur[b].y : j == 2 ? w_cur[b].z : w_cur[b].w;
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
#pragma unroll
    for (int b = 0; b < kNBlocks; ++b) w_cur[b] = w_next[b];
  }

  // Reduce the warps' partial sums in shared memory: [warp][value][lane], fp32.
  constexpr int kValues = kMTiles * kNBlocks * 2 * 4;
  __shared__ float partial[kWarps][kValues][32];
  __shared__ int is_last_block;
#pragma unroll
  for (int t = 0; t < kMTiles; ++t)
#pragma unroll
    for (int b = 0; b < kNBlocks; ++b)
#pragma unroll
      for (int h = 0; h < 2; ++h)
#pragma unroll
        for (int r = 0; r < 4; ++r) partial[warp][((t * kNBlocks + b) * 2 + h) * 4 + r][lane] = acc[t][b][h][r];
  __syncthreads();

  // Value v of lane l is C element (row, col) of the block tile.
  auto element = [&](int v, int l, int* row, int* col) {
    const int r = v % 4, h = (v / 4) % 2, b = (v / 8) % kNBlocks, t = v / (8 * kNBlocks);
    *row = m0 + t * 16 + l / 4 + (r >= 2 ? 8 : 0);
    *col = (nb0 + b) * 16 + h * 8 + (l % 4) * 2 + (r & 1);
  };
  const bool single_split = splits == 1;
  for (int e = threadIdx.x; e < kValues * 32; e += blockDim.x) {
    const int v = e / 32, l = e % 32;
    float sum = 0.f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) sum += partial[w][v][l];
    int row, col;
    element(v, l, &row, &col);
    if (row >= m || col >= n) continue;
    if (single_split) {
      y[row * y_stride + col] = __half_as_ushort(__float2half_rn(sum));
    } else {
      atomicAdd(split_sums + static_cast<int64_t>(row) * n + col, sum);
    }
  }
  if (single_split) return;

  // The last block to finish this tile writes it out and clears the scratch for next time.
  __threadfence();
  __syncthreads();
  const int tile = blockIdx.z * gridDim.x + blockIdx.x;
  if (threadIdx.x == 0) {
    const int done = atomicAdd(tile_counters + tile, 1);
    is_last_block = done == splits - 1;
  }
  __syncthreads();
  if (!is_last_block) return;
  __threadfence();
  for (int e = threadIdx.x; e < kValues * 32; e += blockDim.x) {
    int row, col;
    element(e / 32, e % 32, &row, &col);
    if (row >= m || col >= n) continue;
    const float sum = atomicExch(split_sums + static_cast<int64_t>(row) * n + col, 0.f);
    y[row * y_stride + col] = __half_as_ushort(__float2half_rn(sum));
  }
  if (threadIdx.x == 0) tile_counters[tile] = 0;
}

__global__ void permute_columns_kernel(const uint16_t* __restrict__ x, const int32_t* __restrict__ k_perm,
                                       uint16_t* __restrict__ x_out, int k) {
  const int row = blockIdx.y;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < k; i += gridDim.x * blockDim.x) {
    x_out[static_cast<int64_t>(row) * k + i] = x[static_cast<int64_t>(row) * k + k_perm[i]];
  }
}

int num_sms() {
  static int count = [] {
    int device = 0, sms = 132;
    if (cudaGetDevice(&device) == cudaSuccess) {
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    }
    return sms;
  }();
  return count;
}

template <int kMTiles, int kNBlocks>
Status launch(const uint16_t* x, int64_t x_stride, const uint32_t* packed_weight,
              const uint32_t* packed_scales, uint16_t* y, int64_t y_stride, int m, int n, int k,
              int group_size, void* workspace, cudaStream_t stream) {
  const int grid_n = (n / 16 + kNBlocks - 1) / kNBlocks;
  const int grid_m = (m + kMTiles * 16 - 1) / (kMTiles * 16);
  const int num_k_chunks = k / kChunkK;
  // Enough blocks for ~4 resident per SM (16 warps), while every warp keeps >= 1 chunk.
  const int target_blocks = num_sms() * 4;
  int splits = (target_blocks + grid_n * grid_m - 1) / (grid_n * grid_m);
  splits = std::max(1, std::min(splits, num_k_chunks / kWarps));
  float* split_sums = static_cast<float*>(workspace);
  int* tile_counters = reinterpret_cast<int*>(split_sums + static_cast<int64_t>(m) * n);
  const dim3 grid(grid_n, splits, grid_m);
  w4a16_gemm_kernel<kMTiles, kNBlocks><<<grid, kWarps * 32, 0, stream>>>(
      x, x_stride, reinterpret_cast<const uint4*>(packed_weight), packed_scales, y, y_stride, m, n,
      k, group_size, split_sums, tile_counters);
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

Status w4a16_gemm(const uint16_t* x, int64_t x_stride, const uint32_t* packed_weight,
                  const uint32_t* packed_scales, uint16_t* y, int64_t y_stride, int m, int n,
                  int k, int group_size, void* workspace, cudaStream_t stream) {
  if (m <= 0) return m == 0 ? Status::ok() : invalid_argument("w4a16_gemm: m = " + std::to_string(m));
  if (k <= 0 || k % kChunkK != 0) return unsupported("w4a16_gemm: k = " + std::to_string(k) + " is not a positive multiple of 64");
  if (n <= 0 || n % 16 != 0) return unsupported("w4a16_gemm: n = " + std::to_string(n) + " is not a positive multiple of 16");
  if (group_size == -1) group_size = k;
  if (group_size <= 0 || (group_size % kChunkK != 0 && group_size != k)) {
    return unsupported("w4a16_gemm: group_size " + std::to_string(group_size) + " is not a multiple of 64");
  }
  if (x_stride < k || x_stride % 2 != 0) return invalid_argument("w4a16_gemm: x_stride must be even and >= k");
  if (y_stride < n) return invalid_argument("w4a16_gemm: y_stride must be >= n");
  if (x == nullptr || packed_weight == nullptr || packed_scales == nullptr || y == nullptr || workspace == nullptr) {
    return invalid_argument("w4a16_gemm: null pointer argument");
  }
  if (m <= 16) return launch<1, 4>(x, x_stride, packed_weight, packed_scales, y, y_stride, m, n, k, group_size, workspace, stream);
  if (m <= 32) return launch<2, 4>(x, x_stride, packed_weight, packed_scales, y, y_stride, m, n, k, group_size, workspace, stream);
  return launch<4, 2>(x, x_stride, packed_weight, packed_scales, y, y_stride, m, n, k, group_size, workspace, stream);
}

Status w4a16_permute_columns(const uint16_t* x, const int32_t* k_perm, uint16_t* x_out, int m,
                             int k, cudaStream_t stream) {
  if (m <= 0 || k <= 0) return m == 0 ? Status::ok() : invalid_argument("w4a16_permute_columns: bad shape");
  const dim3 grid(std::min((k + 255) / 256, 64), m);
  permute_columns_kernel<<<grid, 256, 0, stream>>>(x, k_perm, x_out, k);
  return last_launch_status("w4a16_permute_columns launch");
}

}  // namespace crosspoint::cuda
