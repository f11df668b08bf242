// The W8A8 GEMV on Hopper warpgroup MMAs (fp8_gemv_wgmma.h says why).
//
// Operands as in gemv.cu's tensor-core kernel, at warpgroup size: the WEIGHTS are wgmma's A
// operand, straight from registers; the ACTIVATIONS its B operand, from shared memory. Lane
// (g = lane / 4, t = lane % 4) of warp w owns weight row 32 b + 8 w + g of block b and loads
// its 16 bytes at 64 s + 16 t for each k step s, kDepth steps ahead. That uint4 is the lane's
// whole A fragment of the step's m64nNk32 wgmma, unchanged: A rows g and g + 8 are both the
// lane's weight row, a0 = bytes 0-3 and a2 = bytes 8-11 as row g (k' = 4t.., 16+4t..), a1 =
// bytes 4-7 and a3 = bytes 12-15 as row g + 8. B column 2 j holds token j's x bytes in row-g
// order and column 2 j + 1 in row-(g+8) order (logical_position below), so that
//   y[token j][row] = D[g][2 j] + D[g + 8][2 j + 1],
// which lane (g, t = j) holds as d0 + d3 of its fragment: N = 8, 16 or 32 columns serve up to
// 4, 8 or 16 tokens, and a 16-byte load costs one instruction and a quarter of a wgmma, with
// no register moves. Every two wgmmas (64 products of each dot product) are waited for and
// added to fp32 registers, the first starting from zero: the tensor core's own FP8
// accumulation never spans more than 64 products.
//
// Work: 32-row tiles of N; K split into `splits` slices when the tiles alone cannot fill the
// GPU (plan_fp8_wgmma_gemv). The blocks of one tile form a thread-block cluster and add their
// partial sums through distributed shared memory in rank order (deterministic; no workspace).
// Each block stages only its slice of x into shared memory (128-byte swizzled rows, the layout
// wgmma.cuh's descriptor describes); the fused form first finds each row's amax over the
// whole row and quantises its slice with fp8_quant.h's formula, so its codes and scales equal
// fp8_quantize_per_token's bit for bit.
#include <cooperative_groups.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <algorithm>
#include <limits>
#include <string>

#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/device_info.h"
#include "kernels/cuda/fp8_gemv_wgmma.h"
#include "kernels/cuda/fp8_quant.h"
#include "kernels/cuda/programmatic_launch.cuh"
#include "kernels/cuda/wgmma.cuh"

namespace crosspoint::cuda {
namespace {

using wgmma_internal::fence_proxy_async_shared;
using wgmma_internal::pin_register;
using wgmma_internal::sw128_kmajor_desc;
using wgmma_internal::wgmma_commit;
using wgmma_internal::wgmma_fence;
using wgmma_internal::wgmma_wait;

constexpr int kThreads = 128;   // one warpgroup
constexpr int kTileRows = 32;   // weight rows per block: 8 per warp (each feeds A rows g and g + 8)
constexpr int kStepBytes = 64;  // k bytes of a weight row per step: one k32 wgmma
constexpr int kDepth = 16;      // steps of weights in flight per lane (64 registers)
// Split cost in steps of one tile, for the plan: the cluster barriers and the reduction of the
// partial sums (the next tile's loads are in flight meanwhile).
constexpr double kSplitCostSteps = 2.0;

// k bytes of x per token one block's shared memory holds (its slice; a multiple of 256: one
// 128-byte B row covers 4 steps; one slice covers the 7B's hidden size, 3584), and the
// block's dynamic shared memory: the B tiles, N rows of 32 bytes per step, 1024-byte aligned
// (hence the slack).
constexpr int kSliceCapBytes = 4096;
template <int kN>
constexpr int shared_bytes() {
  return kN / 2 * kSliceCapBytes + 1024;
}
// Blocks per SM the plan assumes (the kernels' launch bound): the same split for every m, so a
// row's result does not depend on how many rows share the launch.
constexpr int kPlanBlocksPerSm = 4;

struct Work {
  int splits;
  int steps_per_split;
};

// d = A * B (accumulate = 0) or d += A * B for one k32 step of e4m3: A 64 x 32 from registers
// (4 bytes of k per register), B 32 x kN from shared memory (descriptor).
template <int kN>
__device__ __forceinline__ void wgmma_e4m3(float (&d)[kN / 2], const uint4& a, uint64_t b_desc, int accumulate);

template <>
__device__ __forceinline__ void wgmma_e4m3<8>(float (&d)[4], const uint4& a, uint64_t b_desc, int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %9, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n8k32.f32.e4m3.e4m3 {%0, %1, %2, %3}, {%4, %5, %6, %7}, %8, p, 1, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a.x), "r"(a.y), "r"(a.z), "r"(a.w), "l"(b_desc), "r"(accumulate));
}

template <>
__device__ __forceinline__ void wgmma_e4m3<16>(float (&d)[8], const uint4& a, uint64_t b_desc, int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %13, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n16k32.f32.e4m3.e4m3 {%0, %1, %2, %3, %4, %5, %6, %7}, "
      "{%8, %9, %10, %11}, %12, p, 1, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7])
      : "r"(a.x), "r"(a.y), "r"(a.z), "r"(a.w), "l"(b_desc), "r"(accumulate));
}

template <>
__device__ __forceinline__ void wgmma_e4m3<32>(float (&d)[16], const uint4& a, uint64_t b_desc, int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %21, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n32k32.f32.e4m3.e4m3 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, "
      "%12, %13, %14, %15}, {%16, %17, %18, %19}, %20, p, 1, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]),
        "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
      : "r"(a.x), "r"(a.y), "r"(a.z), "r"(a.w), "l"(b_desc), "r"(accumulate));
}

// Where the 4-byte group at byte `offset` of a token's slice of x goes in the B tiles, for
// token j: step s = offset / 64, byte 16 t + 4 q of the step is A's word q of lane t, so it is
// logical k' = 4 t (q < 2) or 16 + 4 t (q >= 2) of column 2 j (q even: row g) or 2 j + 1 (q
// odd: row g + 8). B tiles: 128 bytes of k' (4 steps) by kN columns, chunk c of column n stored
// at chunk c ^ (n % 8) (wgmma.cuh's 128-byte swizzle).
template <int kN>
__device__ __forceinline__ int b_tile_offset(int offset, int token) {
  const int step = offset / kStepBytes, t = offset % kStepBytes / 16, q = offset % 16 / 4;
  const int column = 2 * token + (q & 1);
  const int pos = step % 4 * 32 + (q >= 2 ? 16 : 0) + 4 * t;  // k' within the 128-byte row
  return step / 4 * (kN * 128) + column * 128 + ((pos / 16) ^ (column % 8)) * 16 + pos % 16;
}

// Fused form: each row's scale from its amax over the whole row (fp8_quant.h's formula), into
// row_scale[m]; block 0 also writes x_scale_out.
__device__ __forceinline__ void row_scales(const Fp8WgmmaGemvArgs& a, float* row_scale) {
  __shared__ float warp_amax[kThreads / 32][kFp8WgmmaFusedMaxRows];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int num_vec = a.k / 8;  // 16-byte vectors of 8 fp16 per row
  for (int r = 0; r < a.m; ++r) {
    const uint4* row = reinterpret_cast<const uint4*>(static_cast<const uint8_t*>(a.x) + r * a.x_stride_bytes);
    float amax = 0.f;
#pragma unroll 4
    for (int i = threadIdx.x; i < num_vec; i += kThreads) {
      const uint4 v = __ldg(row + i);
      const half2* h = reinterpret_cast<const half2*>(&v);
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const float2 f = __half22float2(__habs2(h[j]));
        amax = fmaxf(amax, fmaxf(f.x, f.y));
      }
    }
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, offset));
    if (lane == 0) warp_amax[warp][r] = amax;
  }
  __syncthreads();
  if (threadIdx.x < a.m) {
    const int r = threadIdx.x;
    float amax = 0.f;
    for (int w = 0; w < kThreads / 32; ++w) amax = fmaxf(amax, warp_amax[w][r]);
    const float s = fmaxf(__fdiv_rn(amax, kFp8E4M3Max), kFp8MinScale);
    row_scale[r] = s;
    if (a.x_scale_out != nullptr && blockIdx.x == 0) a.x_scale_out[r] = s;
  }
  __syncthreads();
}

// This block's slice of x (k bytes [k0, k0 + len)) into the B tiles: e4m3 codes read as they
// are, or (kFused) quantised from fp16 with row_scale; tokens >= m and k >= K are zero. The
// blocks of tile 0 also write their slice of the fused codes to xq_out.
template <int kN, bool kFused>
__device__ __forceinline__ void stage_x(const Fp8WgmmaGemvArgs& a, int k0, int len, bool writes_codes,
                                        const float* row_scale, unsigned char* b_tiles) {
  constexpr int kTokens = kN / 2;
  const int words = len / 4;  // 4-byte groups of k per token
  for (int idx = threadIdx.x; idx < kTokens * words; idx += kThreads) {
    const int r = idx / words, offset = idx % words * 4, kk = k0 + offset;
    uint32_t codes = 0;
    if (r < a.m && kk < a.k) {
      const uint8_t* row = static_cast<const uint8_t*>(a.x) + r * a.x_stride_bytes;
      if constexpr (kFused) {
        const uint2 bits = *reinterpret_cast<const uint2*>(row + 2 * static_cast<int64_t>(kk));
        const half2* h = reinterpret_cast<const half2*>(&bits);
        const float s = row_scale[r];
#pragma unroll
        for (int j = 0; j < 2; ++j) {
          const float2 f = __half22float2(h[j]);
          codes |= (static_cast<uint32_t>(__nv_cvt_float_to_fp8(__fdiv_rn(f.x, s), __NV_SATFINITE, __NV_E4M3)) |
                    static_cast<uint32_t>(__nv_cvt_float_to_fp8(__fdiv_rn(f.y, s), __NV_SATFINITE, __NV_E4M3)) << 8)
                   << (16 * j);
        }
        if (writes_codes && a.xq_out != nullptr)
          *reinterpret_cast<uint32_t*>(a.xq_out + r * a.xq_out_stride + kk) = codes;
      } else {
        codes = *reinterpret_cast<const uint32_t*>(row + kk);
      }
    }
    *reinterpret_cast<uint32_t*>(b_tiles + b_tile_offset<kN>(offset, r)) = codes;
  }
}

// Persistent: grid = a multiple of `splits` blocks of one warpgroup, at most the resident
// ones, in clusters of `splits` consecutive blocks. Cluster c walks tiles c, c + C, ... (C
// clusters); its block of rank r always takes K slice r, so each block stages its slice of x
// once. The weight loads run as one stream over all of a block's tiles, kDepth steps ahead,
// so the next tile's first loads are in flight while the current tile finishes.
template <int kN, bool kFused>
__global__ void __launch_bounds__(kThreads, kPlanBlocksPerSm)
    fp8_gemv_wgmma_kernel(const Fp8WgmmaGemvArgs a, const Work work) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  constexpr int kTokens = kN / 2;  // tokens served: two B columns each
  constexpr int kTiles8 = kN / 8;  // n8 tiles of the D fragment
  static_assert(!kFused || kTokens <= kFp8WgmmaFusedMaxRows, "the fused form takes at most 8 rows");
  extern __shared__ unsigned char smem_raw[];
  __shared__ float row_scale[kTokens];
  __shared__ float sums[kTiles8 * kThreads];  // split K: this block's partial sums of a tile
  const uint32_t raw_addr = static_cast<uint32_t>(__cvta_generic_to_shared(smem_raw));
  const uint32_t align_pad = (1024 - (raw_addr & 1023)) & 1023;
  unsigned char* b_tiles = smem_raw + align_pad;
  const uint32_t b_addr = raw_addr + align_pad;

  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, g = lane / 4, t = lane % 4;
  const int split = static_cast<int>(blockIdx.x) % work.splits;  // = the block's rank in its cluster
  const int cluster_id = static_cast<int>(blockIdx.x) / work.splits;
  const int num_clusters = static_cast<int>(gridDim.x) / work.splits;
  const int num_tiles = (a.n + kTileRows - 1) / kTileRows;
  const int my_tiles = cluster_id < num_tiles ? (num_tiles - cluster_id + num_clusters - 1) / num_clusters : 0;
  const int num_chunks = a.k / 16;  // 16-byte pieces of a weight row
  const int num_steps = (num_chunks + 3) / 4;
  const int step_begin = split * work.steps_per_split;
  // Steps of this slice, rounded up to a pair: steps_per_split is even, so only the last
  // slice can round up, past K, where x is staged as zero.
  const int my_steps = max(0, min(work.steps_per_split, (num_steps - step_begin + 1) / 2 * 2));
  const int total_steps = my_tiles * my_steps;  // over all of this block's tiles
  // This lane's weight row of the i-th tile it walks (rows past n re-read row n - 1, never stored).
  auto weight_row = [&](int i) { return (cluster_id + i * num_clusters) * kTileRows + 8 * warp + g; };
  auto row_pointer = [&](int i) {
    return reinterpret_cast<const uint4*>(a.w + static_cast<int64_t>(min(weight_row(i), a.n - 1)) * a.w_stride_bytes);
  };
  // The load cursor: step load_step of tile load_tile (its row at load_row); chunks past K (a
  // partial last step, or the step that rounds the slice up to a pair) re-read the row's last
  // chunk: their x is zero, and those bytes are also multiplied at their own place, so a NaN
  // shows either way.
  int load_tile = 0, load_step = 0;
  const uint4* load_row = row_pointer(0);
  const int chunk0 = step_begin * 4 + t;
  uint4 w[kDepth];
  auto load_next = [&](int slot) {
    w[slot] = __ldcs(load_row + min(chunk0 + 4 * load_step, num_chunks - 1));
    if (++load_step == my_steps) {
      load_step = 0;
      load_row = row_pointer(++load_tile);
    }
  };
#pragma unroll
  for (int s = 0; s < kDepth; ++s)
    if (s < total_steps) load_next(s);
  // Programmatic launch: only weights (which no kernel writes) are read above this line.
  wait_for_prior_kernels();
  allow_dependent_launch();

  if constexpr (kFused) row_scales(a, row_scale);
  stage_x<kN, kFused>(a, step_begin * kStepBytes, my_steps * kStepBytes, blockIdx.x < work.splits, row_scale, b_tiles);
  fence_proxy_async_shared();  // the generic-proxy stores above, before wgmma reads them
  __syncthreads();

  // acc[j] of lane (g, t): this tile's weight row, token 4 j + t.
  auto store = [&](int channel, int token, float sum) {
    if (channel >= a.n || token >= a.m) return;
    const float x_scale = kFused ? row_scale[token] : a.x_scale[token];
    a.y[token * a.y_stride + channel] = __half_as_ushort(__float2half_rn(sum * x_scale * a.w_scale[channel]));
  };
  // Split K: each block parks its sums in shared memory, then block `split` adds its share of
  // the tile's elements over the cluster's blocks in rank order; the second cluster barrier
  // keeps every block's sums until the others have read them (the loads of the next tile are
  // in flight meanwhile).
  auto finish_tile = [&](int i, float(&acc)[kTiles8]) {
    if (work.splits == 1) {
#pragma unroll
      for (int j = 0; j < kTiles8; ++j) store(weight_row(i), 4 * j + t, acc[j]);
      return;
    }
#pragma unroll
    for (int j = 0; j < kTiles8; ++j) sums[j * kThreads + threadIdx.x] = acc[j];
    cooperative_groups::cluster_group cluster = cooperative_groups::this_cluster();
    cluster.sync();
    constexpr int kElements = kThreads * kTiles8;
    const int begin = kElements * split / work.splits, end = kElements * (split + 1) / work.splits;
    const int tile_row0 = (cluster_id + i * num_clusters) * kTileRows;
    for (int e = begin + static_cast<int>(threadIdx.x); e < end; e += kThreads) {
      const int j = e / kThreads, src = e % kThreads;  // sum j of thread src
      const int src_lane = src % 32;
      const int channel = tile_row0 + 8 * (src / 32) + src_lane / 4;
      const int token = 4 * j + src_lane % 4;
      if (channel >= a.n || token >= a.m) continue;
      float total = 0.f;
      for (int q = 0; q < work.splits; ++q) total += cluster.map_shared_rank(sums, q)[e];
      store(channel, token, total);
    }
    cluster.sync();
  };

  // Steps in pairs: two wgmmas into d (the first from zero), waited for, and each token's
  // d[g][2 j] + d[g + 8][2 j + 1] added to acc in fp32; the pair's slots reloaded kDepth ahead.
  float acc[kTiles8], d[kN / 2];
#pragma unroll
  for (int j = 0; j < kTiles8; ++j) acc[j] = 0.f;
#pragma unroll
  for (int j = 0; j < kN / 2; ++j) d[j] = 0.f;
  // Shared-memory descriptor of step i of the slice: B tile i / 4, 32 (i % 4) bytes into its
  // rows (16-byte units).
  const uint64_t desc0 = sw128_kmajor_desc(b_addr);
  static_assert(kDepth % 2 == 0, "steps go in pairs");
  int tile_i = 0, step = 0;  // the compute cursor
  for (int base = 0; base < total_steps; base += kDepth) {
#pragma unroll
    for (int s = 0; s < kDepth; s += 2) {
      if (base + s >= total_steps) break;
      const uint64_t desc = desc0 + static_cast<uint64_t>(step / 4 * (kN * 8) + step % 4 * 2);  // step even
      wgmma_fence();
      wgmma_e4m3<kN>(d, w[s], desc, 0);
      wgmma_e4m3<kN>(d, w[s + 1], desc + 2, 1);  // +32 bytes
      wgmma_commit();
      wgmma_wait<0>();
#pragma unroll
      for (int j = 0; j < kTiles8; ++j) {
        pin_register(d[4 * j]);
        pin_register(d[4 * j + 3]);
        acc[j] += d[4 * j] + d[4 * j + 3];
      }
      if (base + s + kDepth < total_steps) load_next(s);
      if (base + s + 1 + kDepth < total_steps) load_next(s + 1);
      if ((step += 2) == my_steps) {
        finish_tile(tile_i, acc);
#pragma unroll
        for (int j = 0; j < kTiles8; ++j) acc[j] = 0.f;
        step = 0;
        ++tile_i;
      }
    }
  }
  // A block without tiles still takes part in its cluster's barriers: none (clusters are
  // whole, and every cluster below num_tiles has tiles; the grid has no more clusters than tiles).
#else
  __trap();  // built without sm_90a; the host runs this kernel only on compute capability 9.0
#endif
}

template <int kN, bool kFused>
Status launch(const Fp8WgmmaGemvArgs& a, int force_splits, cudaStream_t stream) {
  constexpr auto kKernel = fp8_gemv_wgmma_kernel<kN, kFused>;
  constexpr int kSmem = shared_bytes<kN>();
  static const int blocks_per_sm = resident_blocks_per_sm(kKernel, kThreads, kSmem);
  if (blocks_per_sm <= 0) return internal_error("fp8_gemv_wgmma: the kernel cannot be resident on this device");
  const Fp8WgmmaGemvPlan plan = plan_fp8_wgmma_gemv(a.m, a.n, a.k, cuda_device_info().num_sms, force_splits);
  if (plan.splits <= 0) {
    return unsupported("fp8_gemv_wgmma: k = " + std::to_string(a.k) + " is longer than " +
                       std::to_string(kFp8WgmmaMaxSplits) + " slices of " + std::to_string(kSliceCapBytes) + " bytes");
  }
  cudaLaunchAttribute attributes[2];
  int num_attributes = 0;
  if (plan.splits > 1) {
    attributes[num_attributes].id = cudaLaunchAttributeClusterDimension;
    attributes[num_attributes].val.clusterDim.x = static_cast<unsigned>(plan.splits);
    attributes[num_attributes].val.clusterDim.y = 1;
    attributes[num_attributes++].val.clusterDim.z = 1;
  }
  if (programmatic_launch_enabled()) {
    attributes[num_attributes].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attributes[num_attributes++].val.programmaticStreamSerializationAllowed = 1;
  }
  // Persistent: whole clusters, no more than the tiles need and the GPU holds at once.
  const int clusters = std::max(1, std::min(plan.tiles, blocks_per_sm * cuda_device_info().num_sms / plan.splits));
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(static_cast<unsigned>(clusters * plan.splits));
  config.blockDim = dim3(kThreads);
  config.dynamicSmemBytes = kSmem;
  config.stream = stream;
  config.attrs = attributes;
  config.numAttrs = num_attributes;
  const Work work{plan.splits, plan.steps_per_split};
  return cuda_status(cudaLaunchKernelEx(&config, kKernel, a, work),
                     kFused ? "fp8_gemv_from_fp16 (wgmma) launch" : "fp8_gemv (wgmma) launch");
}

}  // namespace

int fp8_wgmma_columns(int m) { return m <= 4 ? 8 : m <= 8 ? 16 : 32; }

Fp8WgmmaGemvPlan plan_fp8_wgmma_gemv(int m, int n, int k, int num_sms, int force_splits) {
  Fp8WgmmaGemvPlan plan;
  plan.columns = fp8_wgmma_columns(m);
  plan.tiles = (n + kTileRows - 1) / kTileRows;
  const int num_steps = (k / 16 + 3) / 4;
  const int cap_steps = kSliceCapBytes / kStepBytes;
  const int min_splits = std::max(1, (num_steps + cap_steps - 1) / cap_steps);
  if (min_splits > kFp8WgmmaMaxSplits) return plan;  // splits = 0: unsupported
  int splits = min_splits;
  if (force_splits > 0) {
    splits = std::clamp(force_splits, min_splits, kFp8WgmmaMaxSplits);
  } else {
    // Waves of blocks x (steps per block + split cost); each slice keeps >= 4 steps.
    const int64_t slots = static_cast<int64_t>(std::max(1, num_sms)) * kPlanBlocksPerSm;
    const int max_splits = std::max(min_splits, std::min(kFp8WgmmaMaxSplits, num_steps / 4));
    double best = std::numeric_limits<double>::infinity();
    for (int s = min_splits; s <= max_splits; ++s) {
      const int64_t waves = (static_cast<int64_t>(plan.tiles) * s + slots - 1) / slots;
      const double cost = static_cast<double>(waves) * ((num_steps + s - 1) / s + (s > 1 ? kSplitCostSteps : 0.0));
      if (cost < best - 1e-9) {
        best = cost;
        splits = s;
      }
    }
  }
  plan.steps_per_split = ((num_steps + splits - 1) / splits + 1) / 2 * 2;       // even: the kernel takes steps in pairs
  plan.splits = (num_steps + plan.steps_per_split - 1) / plan.steps_per_split;  // no empty slice
  return plan;
}

bool fp8_gemv_wgmma_available() {
  const CudaDeviceInfo& d = cuda_device_info();
  return d.major == 9 && d.minor == 0;
}

Status fp8_gemv_wgmma(const Fp8WgmmaGemvArgs& args, int force_splits, cudaStream_t stream) {
  const bool fused = args.x_scale == nullptr;
  if (args.m < 1 || args.m > (fused ? kFp8WgmmaFusedMaxRows : kFp8WgmmaMaxRows) || args.k <= 0 || args.k % 16 != 0)
    return invalid_argument("fp8_gemv_wgmma: m = " + std::to_string(args.m) + ", k = " + std::to_string(args.k));
  switch (fp8_wgmma_columns(args.m)) {
    case 8: return fused ? launch<8, true>(args, force_splits, stream) : launch<8, false>(args, force_splits, stream);
    case 16:
      return fused ? launch<16, true>(args, force_splits, stream) : launch<16, false>(args, force_splits, stream);
    default: return launch<32, false>(args, force_splits, stream);
  }
}

}  // namespace crosspoint::cuda
