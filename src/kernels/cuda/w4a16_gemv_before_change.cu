// TEMPORARY (measured side by side, then removed): the W4A16 small-batch kernel before the change.
// W4A16 small-batch kernel (M <= 8): weights as the mma A operand, activations as B; each
// warp streams every num_warps-th packed k chunk of one n16 block from HBM straight into
// registers, kDepth chunks ahead; the block's warps split K and meet in shared memory.
// Design and layout: w4a16_gemv.h, w4a16_gemm.h.
#include <cuda_fp16.h>

#include <algorithm>
#include <string>

#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/device_info.h"
#include "kernels/cuda/programmatic_launch.cuh"
#include "kernels/cuda/w4a16_fragments.cuh"
#include "kernels/cuda/w4a16_gemv.h"

namespace crosspoint::cuda {
namespace before_change {

using w4a16_internal::dequant_word;
using w4a16_internal::dequant_word_zero;
using w4a16_internal::mma_m16n8k16;

constexpr int kChunkK = 64;    // input rows per packed chunk: 4 mma k-steps, 512 B per n16 block
constexpr int kMaxWarps = 32;  // warps per block at most (1024 threads)
// Chunks in flight per warp, chosen on the H200 (weights 4 or 8 deep, activations 1, 2 or 4;
// docs/cuda.md): more registers cost more warps than the deeper pipeline gains.
constexpr int kWeightDepth = 4;      // weights and scales (from HBM)
constexpr int kActivationDepth = 1;  // activations (L1/L2)
constexpr int kMaxBlocksPerSm = 32;  // resident blocks per SM on sm_80..sm_90

// 16-byte streaming load of data read once per step: read-only path, not kept in L1 (the
// activations live there), with a 256-byte L2 prefetch (a warp reads 512 contiguous bytes).
__device__ __forceinline__ uint4 load_streaming_16(const uint4* ptr) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(ptr));
  return v;
}

// acc[4] += scale * (W tile^T · x) over one 64-deep chunk of packed words `weight`. x_pairs
// holds this chunk's B fragments ([2j] = x[token][j*16 + 2t, +1], [2j+1] = the pair 8
// further); each pair is reloaded from `next_x` (a later chunk's) as soon as its MMA has read
// it, so the activations run ahead in 8 registers a chunk. The MMAs sum the unscaled (q - 8)
// products in fp32 (exact: |q - 8| <= 8 times an fp16 value); the group scale half2
// (s[n = c], s[n = c + 8]) is applied once per chunk in fp32. kZeros: the group's zero pair
// (asymmetric weights) instead of 8; the products (q - z) x are as exact. kHalfGroups (groups of
// 32 rows): the chunk's second half (k16 steps 2, 3) has its own group, p.scale2 / p.zero2, and
// the first half's sum is scaled before it starts.
struct ChunkParams {
  uint32_t scale = 0, zero = 0;    // half2 (s[c], s[c + 8]); kZeros: (1024 + z[c], 1024 + z[c + 8])
  uint32_t scale2 = 0, zero2 = 0;  // kHalfGroups: the same of the chunk's second group
};

__device__ __forceinline__ void add_scaled(uint32_t scale, float* chunk_sum, float* acc) {
  const float2 s = __half22float2(*reinterpret_cast<const half2*>(&scale));
  acc[0] = fmaf(s.x, chunk_sum[0], acc[0]);  // C rows n = c: tokens 2t, 2t+1
  acc[1] = fmaf(s.x, chunk_sum[1], acc[1]);
  acc[2] = fmaf(s.y, chunk_sum[2], acc[2]);  // C rows n = c + 8
  acc[3] = fmaf(s.y, chunk_sum[3], acc[3]);
}

template <bool kZeros, bool kHalfGroups>
__device__ __forceinline__ void multiply_chunk(uint4 weight, const ChunkParams& p, uint32_t* x_pairs,
                                               const uint32_t* next_x, float* acc) {
  float chunk_sum[4] = {};
  const uint32_t words[4] = {weight.x, weight.y, weight.z, weight.w};
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    if constexpr (kHalfGroups) {
      if (j == 2) {  // the first group's rows are done
        add_scaled(p.scale, chunk_sum, acc);
        for (float& v : chunk_sum) v = 0.f;
      }
    }
    half2 frag[4];
    if constexpr (kZeros) {
      dequant_word_zero(words[j], kHalfGroups && j >= 2 ? p.zero2 : p.zero, frag);
    } else {
      dequant_word(words[j], frag);
    }
    const uint32_t* f = reinterpret_cast<const uint32_t*>(frag);
    // A fragment (rows = n, cols = k): a0 (n=c, k0..), a1 (n=c+8, k0..), a2 (n=c, k0+8..),
    // a3 (n=c+8, k0+8..).
    const uint32_t a[4] = {f[0], f[2], f[1], f[3]};
    mma_m16n8k16(chunk_sum, a, x_pairs[2 * j], x_pairs[2 * j + 1]);
    x_pairs[2 * j] = __ldg(next_x + j * 8);
    x_pairs[2 * j + 1] = __ldg(next_x + j * 8 + 4);
  }
  add_scaled(kHalfGroups ? p.scale2 : p.scale, chunk_sum, acc);
}

// kDepth chunks of weights and kXDepth chunks of activations in flight per warp; deeper
// pipelines need more registers (5 and 8 a chunk), so blocks of fewer threads.
template <int kDepth, int kXDepth>
constexpr int max_threads_for_depth() {
  return kDepth * 5 + kXDepth * 8 <= 28 ? 1024 : 512;
}

// grid = N/16 blocks (block b owns output columns b*16 .. +15), blockDim = 32 * warps.
// Warp w multiplies chunks w, w + warps, ... of its block's columns, for the m <= 8 tokens
// that are the MMA's 8 columns.
template <int kDepth, int kXDepth, bool kZeros, bool kHalfGroups>
__global__ void __launch_bounds__(max_threads_for_depth<kDepth, kXDepth>(), 1)
    w4a16_gemv_kernel(const uint16_t* __restrict__ x, int64_t x_stride, const uint4* __restrict__ packed_weight,
                      const uint32_t* __restrict__ packed_scales, const uint32_t* __restrict__ packed_zeros,
                      uint16_t* __restrict__ y, int64_t y_stride, int m, int n, int k, int group_size) {
  extern __shared__ float4 warp_sums[];  // [warps][32 lanes] fp32 C fragments
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  const int num_warps = blockDim.x / 32;
  const int nb = blockIdx.x;
  const int num_n_blocks = n / 16;
  const int num_chunks_total = k / kChunkK;
  // Chunk i of this warp is warp + i * num_warps: the block's warps read neighbouring
  // 512-byte pieces at the same time (faster on the H200 than one contiguous run per warp,
  // which scatters the reads over the block's whole weight slab).
  const int first_chunk = warp, chunk_step = num_warps;
  const int num_chunks =
      warp < num_chunks_total ? (num_chunks_total - warp + num_warps - 1) / num_warps : 0;  // may be 0
  const int frag_row = lane / 4;        // c: A/C row (n), B column (token)
  const int frag_col = (lane % 4) * 2;  // k0: A/B k offset; C column 2t

  // This lane's 16-byte word group of chunk i is weight_lane[i * weight_step].
  const uint4* weight_lane = packed_weight + (static_cast<int64_t>(nb) * num_chunks_total + first_chunk) * 32 + lane;
  const int weight_step = chunk_step * 32;
  // Scales of the chunks in load order: group = chunk / chunks_per_group by a multiply-high
  // with ceil(2^32 / chunks_per_group), exact while chunk * chunks_per_group < 2^32; with
  // groups of 32 rows, groups 2 chunk and 2 chunk + 1.
  const uint32_t chunks_per_group = kHalfGroups ? 1u : static_cast<uint32_t>(group_size / kChunkK);
  const uint32_t group_magic = static_cast<uint32_t>((0x100000000ull + chunks_per_group - 1) / chunks_per_group);
  const int64_t scale_group_stride = static_cast<int64_t>(num_n_blocks) * 8;
  const uint32_t* scale_lane = packed_scales + nb * 8 + frag_row;
  const uint32_t* zero_lane = kZeros ? packed_zeros + nb * 8 + frag_row : nullptr;  // the same layout
  uint32_t next_scale_chunk = static_cast<uint32_t>(first_chunk);
  auto next_params = [&]() {
    ChunkParams p;
    uint32_t group;
    if constexpr (kHalfGroups) {
      group = 2 * next_scale_chunk;
    } else {
      group = chunks_per_group == 1 ? next_scale_chunk : __umulhi(next_scale_chunk, group_magic);
    }
    next_scale_chunk += static_cast<uint32_t>(chunk_step);
    p.scale = __ldg(scale_lane + group * scale_group_stride);
    if constexpr (kZeros) p.zero = __ldg(zero_lane + group * scale_group_stride);
    if constexpr (kHalfGroups) {
      p.scale2 = __ldg(scale_lane + (group + 1) * scale_group_stride);
      if constexpr (kZeros) p.zero2 = __ldg(zero_lane + (group + 1) * scale_group_stride);
    }
    return p;
  };
  // B column c is token c; columns >= m read row m-1 (valid memory) and only feed C columns
  // that are never stored.
  const uint32_t* x_row =
      reinterpret_cast<const uint32_t*>(x + min(frag_row, m - 1) * x_stride + first_chunk * kChunkK + frag_col);
  const int x_step = chunk_step * (kChunkK / 2);  // uint32 pairs from chunk i to i + 1

  // Weights and scales kDepth chunks ahead (they come from HBM); activations kXDepth ahead
  // (L2/L1-resident).
  uint4 weight[kDepth];        // packed words j = 0..3 of this lane, per chunk in flight
  ChunkParams params[kDepth];  // that chunk's group scale (and zero point, second group)
#pragma unroll
  for (int s = 0; s < kDepth; ++s) {
    if (s < num_chunks) {
      weight[s] = load_streaming_16(weight_lane + s * weight_step);
      params[s] = next_params();
    }
  }
  // Programmatic launch (programmatic_launch.cuh): only the weights and scales, which no
  // kernel writes, are read before this; x is the previous kernel's output.
  wait_for_prior_kernels();
  allow_dependent_launch();
  static_assert(kDepth % kXDepth == 0, "activation slots must cycle with the weight slots");
  uint32_t x_pairs[kXDepth][8] = {};
  if (num_chunks > 0) {  // a warp with no chunks (more warps than chunks) reads nothing
#pragma unroll
    for (int q = 0; q < kXDepth; ++q) {
      const uint32_t* p = x_row + min(q, num_chunks - 1) * x_step;
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        x_pairs[q][2 * j] = __ldg(p + j * 8);
        x_pairs[q][2 * j + 1] = __ldg(p + j * 8 + 4);
      }
    }
  }

  float acc[4] = {};
  for (int base = 0; base < num_chunks; base += kDepth) {
#pragma unroll
    for (int s = 0; s < kDepth; ++s) {
      const int i = base + s;
      if (i < num_chunks) {
        // The last chunks reload the last activations (valid memory, never used).
        const uint32_t* next_x = x_row + min(i + kXDepth, num_chunks - 1) * x_step;
        multiply_chunk<kZeros, kHalfGroups>(weight[s], params[s], x_pairs[s % kXDepth], next_x, acc);
        if (i + kDepth < num_chunks) {
          weight[s] = load_streaming_16(weight_lane + (i + kDepth) * weight_step);
          params[s] = next_params();
        }
      }
    }
  }

  warp_sums[warp * 32 + lane] = make_float4(acc[0], acc[1], acc[2], acc[3]);
  __syncthreads();
  // 128 outputs per block (16 columns x 8 token slots): thread e sums element e of every
  // warp's fragments. Element e = lane' * 4 + r: column c' = lane'/4 (+8 for r >= 2), token
  // 2 * (lane' % 4) + (r & 1).
  const float* sums = reinterpret_cast<const float*>(warp_sums);
  for (int e = threadIdx.x; e < 128; e += blockDim.x) {
    const int src_lane = e / 4, r = e % 4;
    const int out_token = (src_lane % 4) * 2 + (r & 1);
    if (out_token >= m) continue;
    float total = 0.f;
    for (int w = 0; w < num_warps; ++w) total += sums[w * 128 + e];  // fixed order: deterministic
    const int col = nb * 16 + src_lane / 4 + (r >= 2 ? 8 : 0);
    y[out_token * y_stride + col] = __half_as_ushort(__float2half_rn(total));
  }
}

// Warps one SM holds of w4a16_gemv_kernel<kDepth, kXDepth>, from its register count (the
// only limit: shared memory is at most 16 KB a block).
template <int kDepth, int kXDepth, bool kZeros, bool kHalfGroups>
int max_warps_per_sm() {
  static const int warps = [] {
    cudaFuncAttributes attr{};
    int regs = 64;
    if (cudaFuncGetAttributes(&attr, w4a16_gemv_kernel<kDepth, kXDepth, kZeros, kHalfGroups>) == cudaSuccess &&
        attr.numRegs > 0)
      regs = attr.numRegs;
    const int regs_per_warp = (regs * 32 + 255) / 256 * 256;  // allocated per warp in 256s
    return std::clamp(65536 / regs_per_warp, 1, 64);
  }();
  return warps;
}

template <int kDepth, int kXDepth, bool kZeros, bool kHalfGroups>
Status launch_gemv(const uint16_t* x, int64_t x_stride, const uint32_t* packed_weight, const uint32_t* packed_scales,
                   const uint32_t* packed_zeros, uint16_t* y, int64_t y_stride, int m, int n, int k, int group_size,
                   int warps_per_block, cudaStream_t stream);

}  // namespace before_change

Status w4a16_gemv_before_change(const uint16_t* x, int64_t x_stride, const uint32_t* packed_weight,
                                const uint32_t* packed_scales, uint16_t* y, int64_t y_stride, int m, int n, int k,
                                int group_size, cudaStream_t stream, int warps_per_block,
                                const uint32_t* packed_zeros) {
  using namespace before_change;
  if (m == 0) return Status::ok();
  if (m < 0 || m > kW4A16GemvKernelMaxRows) {
    return invalid_argument("w4a16_gemv: m = " + std::to_string(m) + " is outside 0.." +
                            std::to_string(kW4A16GemvKernelMaxRows));
  }
  if (k <= 0 || k % kChunkK != 0)
    return unsupported("w4a16_gemv: k = " + std::to_string(k) + " is not a positive multiple of 64");
  if (k >= (1 << 22))
    return unsupported("w4a16_gemv: k = " + std::to_string(k) + " is over the 4M rows the group lookup handles");
  if (n <= 0 || n % 16 != 0)
    return unsupported("w4a16_gemv: n = " + std::to_string(n) + " is not a positive multiple of 16");
  if (group_size == -1) group_size = k;
  if (group_size != 32 && (group_size <= 0 || group_size % kChunkK != 0)) {
    return unsupported("w4a16_gemv: group_size " + std::to_string(group_size) + " is not 32 or a multiple of 64");
  }
  if (x_stride < k || x_stride % 8 != 0)
    return invalid_argument("w4a16_gemv: x_stride must be a multiple of 8 and >= k");
  if (y_stride < n) return invalid_argument("w4a16_gemv: y_stride must be >= n");
  if (warps_per_block < 0 || warps_per_block > kMaxWarps) {
    return invalid_argument("w4a16_gemv: warps_per_block " + std::to_string(warps_per_block) + " is outside 0..32");
  }
  if (x == nullptr || packed_weight == nullptr || packed_scales == nullptr || y == nullptr) {
    return invalid_argument("w4a16_gemv: null pointer argument");
  }
  const bool half_groups = group_size == 32;
  if (packed_zeros != nullptr) {
    return half_groups
               ? launch_gemv<kWeightDepth, kActivationDepth, true, true>(x, x_stride, packed_weight, packed_scales,
                                                                         packed_zeros, y, y_stride, m, n, k, group_size,
                                                                         warps_per_block, stream)
               : launch_gemv<kWeightDepth, kActivationDepth, true, false>(x, x_stride, packed_weight, packed_scales,
                                                                          packed_zeros, y, y_stride, m, n, k,
                                                                          group_size, warps_per_block, stream);
  }
  return half_groups
             ? launch_gemv<kWeightDepth, kActivationDepth, false, true>(x, x_stride, packed_weight, packed_scales,
                                                                        nullptr, y, y_stride, m, n, k, group_size,
                                                                        warps_per_block, stream)
             : launch_gemv<kWeightDepth, kActivationDepth, false, false>(x, x_stride, packed_weight, packed_scales,
                                                                         nullptr, y, y_stride, m, n, k, group_size,
                                                                         warps_per_block, stream);
}

namespace before_change {

// Arguments already checked by w4a16_gemv. warps_per_block 0: w4a16_gemv_shape's choice.
template <int kDepth, int kXDepth, bool kZeros, bool kHalfGroups>
Status launch_gemv(const uint16_t* x, int64_t x_stride, const uint32_t* packed_weight, const uint32_t* packed_scales,
                   const uint32_t* packed_zeros, uint16_t* y, int64_t y_stride, int m, int n, int k, int group_size,
                   int warps_per_block, cudaStream_t stream) {
  constexpr int kMaxBlockWarps = max_threads_for_depth<kDepth, kXDepth>() / 32;
  W4A16GemvShape shape =
      w4a16_gemv_shape(n, k, cuda_device_info().num_sms, max_warps_per_sm<kDepth, kXDepth, kZeros, kHalfGroups>());
  if (warps_per_block > 0) shape.warps_per_block = warps_per_block;
  shape.warps_per_block = std::min(shape.warps_per_block, kMaxBlockWarps);
  const size_t smem_bytes = static_cast<size_t>(shape.warps_per_block) * 32 * sizeof(float4);
  CROSSPOINT_CUDA_RETURN_IF_ERROR(
      launch_programmatic(w4a16_gemv_kernel<kDepth, kXDepth, kZeros, kHalfGroups>, dim3(shape.num_blocks),
                          dim3(shape.warps_per_block * 32), smem_bytes, stream, x, x_stride,
                          reinterpret_cast<const uint4*>(packed_weight), packed_scales, packed_zeros, y, y_stride, m, n,
                          k, group_size),
      "w4a16_gemv launch");
  return Status::ok();
}

}  // namespace before_change
}  // namespace crosspoint::cuda
