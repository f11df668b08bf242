// fp8 (W8A8, e4m3) small-batch GEMV on tensor cores fed by a per-lane cp.async ring in shared
// memory (GemvOptions::fp8_ring), plain or with the per-token activation quantisation fused in.
// Design, plan and layout: gemv.h.
//
// Registers (sm_90, -Xptxas -v, CUDA 13.0): plain 58 (one token tile, 32 warps per SM by
// registers, 28 by the 8 KB rings), 83 (two tiles, blocks of <= 16 warps); fused 60; 0 spills.
#include <cooperative_groups.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <algorithm>
#include <string>

#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/fp8_gemv_ring.h"
#include "kernels/cuda/fp8_quant.h"
#include "kernels/cuda/gemv.h"
#include "kernels/cuda/programmatic_launch.cuh"

namespace crosspoint::cuda {
namespace {

namespace cg = cooperative_groups;

constexpr int kDepth = 8;          // 64-byte steps of 16 rows in flight per warp (8 KB)
constexpr int kMaxWarps = 32;
constexpr int kMaxSplits = 8;      // portable cluster size
constexpr int kMaxGroupsPerBlock = 16;
constexpr int kMaxRowsFused = kGemvMaxRows;  // the fused kernel serves one token tile
constexpr int kSlotBytesPerLane = 32;        // rows g and g + 8, 16 bytes each
constexpr int kFusedScratchBytes = 2 * kMaxRowsFused * 4;  // block amax and scale per row
// Shared memory the plan may fill per SM: below the 228 KB maximum so that the driver's carveout
// leaves L1 room for the activations (plain kernel), which every warp re-reads through L1.
constexpr int kSharedBudgetPerSm = 200 * 1024;

struct RingArgs {
  const uint8_t* xq;        // plain: [M, K] e4m3, row stride xq_stride bytes
  int64_t xq_stride;
  const float* x_scale;     // plain: [M] fp32
  const uint16_t* x;        // fused: [M, K] fp16, row stride x_stride elements
  int64_t x_stride;
  const uint8_t* w;         // [N, K] e4m3, row stride w_stride bytes
  int64_t w_stride;
  const float* w_scale;     // [N] fp32
  uint16_t* y;              // [M, N] fp16, row stride y_stride elements
  int64_t y_stride;
  uint8_t* xq_out;          // fused, optional: [M, K] e4m3 copy of the codes
  int64_t xq_out_stride;
  float* x_scale_out;       // fused, optional: [M] fp32
  int m, n, k;
  int groups_per_block, k_splits, steps_per_split;
};

__device__ __forceinline__ uint32_t shared_address(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
// 16 bytes into shared memory through L2 only; src_bytes 0 writes zeros (a K tail).
__device__ __forceinline__ void copy_16_async(void* shared_dst, const void* global_src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global.L2::256B [%0], [%1], 16, %2;\n" ::"r"(shared_address(shared_dst)),
               "l"(global_src), "r"(src_bytes)
               : "memory");
}
__device__ __forceinline__ void commit_async() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int kPending>
__device__ __forceinline__ void wait_async() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
}

// e4m3 tensor-core MMA, 16 x 8 x 32, fp32 accumulate (sm_89 and later).
__device__ __forceinline__ void mma_e4m3(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, uint32_t b0,
                                         uint32_t b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
#else
  __trap();  // the host launches this kernel only on sm_89+
#endif
}

// Fused only: the per-token quantisation of this block's K slice [k_begin, k_end) of x into
// codes [m][slice_bytes] e4m3, with the row amax of all of K (the cluster's slices together)
// and fp8_quant.h's formula, the same operations as fp8_quantize_per_token. row_scale [m] gets
// the scales. Run by the whole block (and, with k_splits > 1, the whole cluster).
__device__ __forceinline__ void quantise_slice(const RingArgs& a, int k_begin, int k_end, int slice_bytes, uint8_t* codes,
                                               float* block_amax, float* row_scale, bool write_copies) {
  const int num_threads = blockDim.x;
  const int lane = threadIdx.x % 32;
  const int vec_begin = k_begin / 8, vec_end = k_end / 8;  // 16-byte vectors of 8 fp16 values
  if (threadIdx.x < kMaxRowsFused) block_amax[threadIdx.x] = 0.f;
  __syncthreads();
  for (int r = 0; r < a.m; ++r) {
    const uint4* row = reinterpret_cast<const uint4*>(a.x + r * a.x_stride);
    float amax = 0.f;
    for (int i = vec_begin + static_cast<int>(threadIdx.x); i < vec_end; i += num_threads) {
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
    // amax >= 0, so the float bits order like ints: an atomic max in shared memory is exact
    // and its result does not depend on the order.
    if (lane == 0) atomicMax(reinterpret_cast<int*>(block_amax + r), __float_as_int(amax));
  }
  if (a.k_splits > 1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    cg::cluster_group cluster = cg::this_cluster();
    cluster.sync();  // every rank's slice amax written
    if (threadIdx.x < a.m) {
      float row_amax = 0.f;
      for (int rank = 0; rank < a.k_splits; ++rank) row_amax = fmaxf(row_amax, *cluster.map_shared_rank(block_amax + threadIdx.x, rank));
      row_scale[threadIdx.x] = fmaxf(__fdiv_rn(row_amax, kFp8E4M3Max), kFp8MinScale);
    }
#else
    __trap();
#endif
  } else {
    __syncthreads();
    if (threadIdx.x < a.m) row_scale[threadIdx.x] = fmaxf(__fdiv_rn(block_amax[threadIdx.x], kFp8E4M3Max), kFp8MinScale);
  }
  __syncthreads();
  if (write_copies && a.x_scale_out != nullptr && k_begin == 0 && threadIdx.x < a.m) a.x_scale_out[threadIdx.x] = row_scale[threadIdx.x];
  for (int r = 0; r < a.m; ++r) {
    const uint4* row = reinterpret_cast<const uint4*>(a.x + r * a.x_stride);
    const float s = row_scale[r];
    for (int i = vec_begin + static_cast<int>(threadIdx.x); i < vec_end; i += num_threads) {
      const uint4 v = __ldg(row + i);
      const half2* h = reinterpret_cast<const half2*>(&v);
      uint32_t bytes[4];
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const float2 f = __half22float2(h[j]);
        bytes[j] = __nv_cvt_float_to_fp8(__fdiv_rn(f.x, s), __NV_SATFINITE, __NV_E4M3) |
                   __nv_cvt_float_to_fp8(__fdiv_rn(f.y, s), __NV_SATFINITE, __NV_E4M3) << 8;
      }
      const uint2 packed = make_uint2(bytes[0] | bytes[1] << 16, bytes[2] | bytes[3] << 16);
      reinterpret_cast<uint2*>(codes + r * slice_bytes)[i - vec_begin] = packed;
      if (write_copies && a.xq_out != nullptr) reinterpret_cast<uint2*>(a.xq_out + r * a.xq_out_stride)[i] = packed;
    }
  }
  // K past k_end inside the last step reads zeros (never stored as codes above).
  const int tail_begin = (k_end - k_begin) / 8, tail_end = slice_bytes / 8;
  for (int r = 0; r < a.m; ++r) {
    for (int i = tail_begin + static_cast<int>(threadIdx.x); i < tail_end; i += num_threads) {
      reinterpret_cast<uint2*>(codes + r * slice_bytes)[i] = make_uint2(0, 0);
    }
  }
  __syncthreads();
}

// Block: groups_per_block groups of 16 output columns x one K slice of steps_per_split 64-byte
// steps; warp w serves group w % groups_per_block and that slice's steps w / groups_per_block,
// + warps per group, ... Lane (g = lane / 4, t = lane % 4) copies, per step, the 16 bytes at
// k = step * 64 + 16 t of weight rows n0 + g and n0 + g + 8 into its own ring slot: the A
// fragments of two m16n8k32 MMAs (as mma_gemv_kernel in gemv.cu); activation row 8 q + g at
// the same k is the B fragment of token tile q. Each lane reads back only its own copies, so
// the only waits are its own cp.async groups until the reduction.
template <int kTiles>
constexpr int max_block_warps() { return kTiles == 1 ? kMaxWarps : kMaxWarps / 2; }  // 2 tiles: up to 128 registers

template <bool kFused, int kTiles>
__global__ void __launch_bounds__(max_block_warps<kTiles>() * 32, 1) fp8_ring_gemv_kernel(const RingArgs a) {
  static_assert(kTiles == 1 || !kFused, "the fused quantisation serves at most 8 rows");
  static_assert(kDepth >= kTiles, "warp sums reuse the first kTiles slots");
  // [warps][kDepth][2 rows][32 lanes] uint4 | block_sums [groups][kTiles * 128] fp32 |
  // fused: block amax [8], row scale [8] fp32 | codes [m][slice_bytes] e4m3
  extern __shared__ uint4 smem[];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, num_warps = blockDim.x / 32;
  const int g = lane / 4, t = lane % 4;
  const int groups = a.groups_per_block, warps_per_group = num_warps / groups;
  const int split = blockIdx.x % a.k_splits, block_group = blockIdx.x / a.k_splits;
  const int group = block_group * groups + warp % groups;  // may be past N / 16 in the last block
  const int num_chunks = a.k / 16;                          // 16-byte pieces of a row
  const int num_steps = (num_chunks + 3) / 4;
  const int step_begin = split * a.steps_per_split;
  const int step_end = min(step_begin + a.steps_per_split, num_steps);
  const int first_step = step_begin + warp / groups;
  const int my_steps = first_step < step_end ? (step_end - first_step + warps_per_group - 1) / warps_per_group : 0;

  uint4* slot_lo = smem + warp * kDepth * 64 + lane;  // slot s: lo at [s * 64], hi at [s * 64 + 32]
  float* block_sums = reinterpret_cast<float*>(smem + num_warps * kDepth * 64);
  float* fused_scratch = block_sums + groups * kTiles * 128;
  uint8_t* codes = reinterpret_cast<uint8_t*>(fused_scratch) + kFusedScratchBytes;
  // Rows past n re-read the last row (results discarded).
  const uint8_t* w_lo = a.w + min(group * 16 + g, a.n - 1) * a.w_stride;
  const uint8_t* w_hi = a.w + min(group * 16 + g + 8, a.n - 1) * a.w_stride;
  int issued = 0;
  auto issue_next = [&]() {
    if (issued < my_steps) {
      const int slot = issued & (kDepth - 1);
      const int chunk = (first_step + issued * warps_per_group) * 4 + t;
      const bool valid = chunk < num_chunks;
      const int64_t offset = valid ? static_cast<int64_t>(chunk) * 16 : 0;
      copy_16_async(slot_lo + slot * 64, w_lo + offset, valid ? 16 : 0);
      copy_16_async(slot_lo + slot * 64 + 32, w_hi + offset, valid ? 16 : 0);
    }
    ++issued;
    commit_async();
  };
#pragma unroll
  for (int s = 0; s < kDepth; ++s) issue_next();
  // Programmatic launch: only weights (no kernel writes them) are read above.
  wait_for_prior_kernels();
  allow_dependent_launch();

  const int slice_bytes = a.steps_per_split * 64;
  const int x_first_chunk = kFused ? step_begin * 4 : 0;  // chunk index of x_row[q][0]
  const uint4* x_row[kTiles];  // activation row 8 q + g (B column g of token tile q), or nullptr past m
  if constexpr (kFused) {
    const int k_begin = step_begin * 64, k_end = min(step_end * 64, a.k);
    quantise_slice(a, k_begin, k_end, slice_bytes, codes, fused_scratch, fused_scratch + kMaxRowsFused, block_group == 0);
    x_row[0] = g < a.m ? reinterpret_cast<const uint4*>(codes + g * slice_bytes) : nullptr;
  } else {
#pragma unroll
    for (int q = 0; q < kTiles; ++q) {
      const int row = 8 * q + g;
      x_row[q] = row < a.m ? reinterpret_cast<const uint4*>(a.xq + row * a.xq_stride) : nullptr;
    }
  }

  float acc[kTiles][4] = {};
  for (int i = 0; i < my_steps; ++i) {
    wait_async<kDepth - 1>();  // this lane's copies of step i have landed
    const int slot = i & (kDepth - 1);
    const uint4 lo = slot_lo[slot * 64], hi = slot_lo[slot * 64 + 32];
    const int chunk = (first_step + i * warps_per_group) * 4 + t;
#pragma unroll
    for (int q = 0; q < kTiles; ++q) {
      uint4 xv = make_uint4(0, 0, 0, 0);
      if (x_row[q] != nullptr && chunk < num_chunks) {
        xv = kFused ? x_row[q][chunk - x_first_chunk] : __ldg(x_row[q] + chunk);
      }
      // Each step's MMAs start from zero and are added in fp32 (as mma_gemv_kernel).
      float d[4] = {0.f, 0.f, 0.f, 0.f};
      mma_e4m3(d, lo.x, hi.x, lo.y, hi.y, xv.x, xv.y);
      mma_e4m3(d, lo.z, hi.z, lo.w, hi.w, xv.z, xv.w);
#pragma unroll
      for (int j = 0; j < 4; ++j) acc[q][j] += d[j];
    }
    // Refilled only after the MMAs (volatile asm, in order before this copy) read the slot.
    issue_next();
  }
  wait_async<0>();

  // Warp sums over the warp's own first kTiles slots (lane-private), then one thread per
  // (group, tile, lane', j) adds the group's warps in a fixed order.
#pragma unroll
  for (int q = 0; q < kTiles; ++q) slot_lo[q * 64] = make_uint4(__float_as_uint(acc[q][0]), __float_as_uint(acc[q][1]),
                                                                 __float_as_uint(acc[q][2]), __float_as_uint(acc[q][3]));
  __syncthreads();
  const float* row_scale = kFused ? fused_scratch + kMaxRowsFused : a.x_scale;
  for (int idx = threadIdx.x; idx < groups * kTiles * 128; idx += blockDim.x) {
    const int grp = idx / (kTiles * 128), q = idx / 128 % kTiles, src_lane = idx / 4 % 32, j = idx % 4;
    float total = 0.f;
    for (int wi = 0; wi < warps_per_group; ++wi) {
      const int src_warp = wi * groups + grp;
      total += reinterpret_cast<const float*>(smem + src_warp * kDepth * 64 + q * 64 + src_lane)[j];
    }
    const int col = (block_group * groups + grp) * 16 + src_lane / 4 + (j >= 2 ? 8 : 0);
    const int r = 8 * q + 2 * (src_lane % 4) + (j & 1);
    if (a.k_splits > 1) {
      block_sums[idx] = total;
    } else if (r < a.m && col < a.n) {
      a.y[r * a.y_stride + col] = __half_as_ushort(__float2half_rn(total * row_scale[r] * a.w_scale[col]));
    }
  }
  if (a.k_splits > 1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    cg::cluster_group cluster = cg::this_cluster();
    cluster.sync();  // every rank's block_sums written and visible
    if (cluster.block_rank() == 0) {
      for (int idx = threadIdx.x; idx < groups * kTiles * 128; idx += blockDim.x) {
        const int grp = idx / (kTiles * 128), q = idx / 128 % kTiles, src_lane = idx / 4 % 32, j = idx % 4;
        const int col = (block_group * groups + grp) * 16 + src_lane / 4 + (j >= 2 ? 8 : 0);
        const int r = 8 * q + 2 * (src_lane % 4) + (j & 1);
        if (r >= a.m || col >= a.n) continue;
        float total = 0.f;
        for (int rank = 0; rank < a.k_splits; ++rank) total += *cluster.map_shared_rank(block_sums + idx, rank);
        a.y[r * a.y_stride + col] = __half_as_ushort(__float2half_rn(total * row_scale[r] * a.w_scale[col]));
      }
    }
    cluster.sync();  // no rank exits while rank 0 still reads its shared memory
#else
    __trap();  // the host launches clusters only on sm_90 and newer
#endif
  }
}

struct DeviceInfo {
  int num_sms = 132, major = 0, minor = 0, smem_per_sm = 233472, reserved = 1024, optin = 232448, max_blocks = 32;
};
const DeviceInfo& device_info() {
  static const DeviceInfo info = [] {
    DeviceInfo d;
    int device = 0;
    if (cudaGetDevice(&device) != cudaSuccess) return d;
    cudaDeviceGetAttribute(&d.num_sms, cudaDevAttrMultiProcessorCount, device);
    cudaDeviceGetAttribute(&d.major, cudaDevAttrComputeCapabilityMajor, device);
    cudaDeviceGetAttribute(&d.minor, cudaDevAttrComputeCapabilityMinor, device);
    cudaDeviceGetAttribute(&d.smem_per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, device);
    cudaDeviceGetAttribute(&d.reserved, cudaDevAttrReservedSharedMemoryPerBlock, device);
    cudaDeviceGetAttribute(&d.optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
    cudaDeviceGetAttribute(&d.max_blocks, cudaDevAttrMaxBlocksPerMultiprocessor, device);
    return d;
  }();
  return info;
}

template <bool kFused, int kTiles>
const Fp8RingLimits& ring_limits() {
  static const Fp8RingLimits limits = [] {
    const DeviceInfo& d = device_info();
    Fp8RingLimits l;
    l.num_sms = d.num_sms;
    l.max_blocks_per_sm = d.max_blocks;
    auto* kernel = fp8_ring_gemv_kernel<kFused, kTiles>;
    cudaFuncAttributes attr{};
    int regs = 64;
    if (cudaFuncGetAttributes(&attr, kernel) == cudaSuccess && attr.numRegs > 0) regs = attr.numRegs;
    const int regs_per_warp = (regs * 32 + 255) / 256 * 256;
    l.max_warps_per_sm = std::clamp(65536 / regs_per_warp, 1, 64);
    l.max_warps_per_block = max_block_warps<kTiles>();
    l.shared_bytes_per_warp = kDepth * 32 * kSlotBytesPerLane;
    l.shared_bytes_per_block = static_cast<int>(attr.sharedSizeBytes) + d.reserved;
    l.shared_bytes_per_sm = std::min({d.smem_per_sm, d.optin + d.reserved, kSharedBudgetPerSm});
    l.clusters = d.major >= 9;
    cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, d.optin - static_cast<int>(attr.sharedSizeBytes));
    cudaGetLastError();  // a refused attribute shows up as a launch error
    return l;
  }();
  return limits;
}

template <bool kFused, int kTiles>
Status launch_ring(RingArgs a, int force_splits, cudaStream_t stream, const char* op) {
  const Fp8RingLimits& limits = ring_limits<kFused, kTiles>();
  if (force_splits > 1 && !limits.clusters) {
    return unsupported(std::string(op) + ": k_splits " + std::to_string(force_splits) + " needs thread-block clusters (sm_90+)");
  }
  const Fp8RingPlan plan = plan_fp8_ring_gemv(a.n, a.k, a.m, kFused, limits, force_splits);
  if (plan.shared_bytes > static_cast<size_t>(device_info().optin)) {
    return unsupported(std::string(op) + ": m * k too large for the ring kernel's shared memory");
  }
  a.groups_per_block = plan.groups_per_block;
  a.k_splits = plan.k_splits;
  a.steps_per_split = plan.steps_per_split;
  cudaLaunchAttribute attributes[2];
  int num_attributes = 0;
  if (plan.k_splits > 1) {
    attributes[num_attributes].id = cudaLaunchAttributeClusterDimension;
    attributes[num_attributes].val.clusterDim.x = static_cast<unsigned>(plan.k_splits);
    attributes[num_attributes].val.clusterDim.y = 1;
    attributes[num_attributes].val.clusterDim.z = 1;
    ++num_attributes;
  }
  if (programmatic_launch_enabled()) {
    attributes[num_attributes].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attributes[num_attributes].val.programmaticStreamSerializationAllowed = 1;
    ++num_attributes;
  }
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(static_cast<unsigned>(plan.num_blocks));
  config.blockDim = dim3(static_cast<unsigned>(plan.warps_per_block * 32));
  config.dynamicSmemBytes = plan.shared_bytes;
  config.stream = stream;
  config.attrs = attributes;
  config.numAttrs = static_cast<unsigned>(num_attributes);
  return cuda_status(cudaLaunchKernelEx(&config, fp8_ring_gemv_kernel<kFused, kTiles>, a), op);
}

}  // namespace

Fp8RingPlan plan_fp8_ring_gemv(int n, int k, int m, bool fused, const Fp8RingLimits& limits, int force_splits) {
  const int num_groups = std::max(1, (n + 15) / 16);
  const int num_steps = std::max(1, (k / 16 + 3) / 4);
  const int num_sms = std::max(1, limits.num_sms);
  const int max_blocks_per_sm = std::clamp(limits.max_blocks_per_sm, 1, 32);
  const int tiles = m > 8 ? 2 : 1;
  const int bytes_per_warp = std::max(1, limits.shared_bytes_per_warp);
  Fp8RingPlan best;
  double best_cost = 0;
  const int max_block_warps = std::clamp(limits.max_warps_per_block, 1, kMaxWarps);
  auto consider = [&](int splits, int groups_per_block) {
    Fp8RingPlan p;
    p.steps_per_split = (num_steps + splits - 1) / splits;
    p.k_splits = (num_steps + p.steps_per_split - 1) / p.steps_per_split;  // no empty slice
    p.groups_per_block = groups_per_block;
    p.num_blocks = (num_groups + groups_per_block - 1) / groups_per_block * p.k_splits;
    const int blocks_per_sm = (p.num_blocks + num_sms - 1) / num_sms;  // on the busiest SM
    const size_t fixed = static_cast<size_t>(limits.shared_bytes_per_block) + static_cast<size_t>(groups_per_block) * tiles * 512 +
                         (fused ? kFusedScratchBytes + static_cast<size_t>(std::max(m, 1)) * p.steps_per_split * 64 : 0);
    // Warps per group that fit with all of the SM's blocks resident; if not even one does,
    // one warp per group and the blocks run in waves.
    auto warps_fitting = [&](int resident_blocks) {
      const int share = limits.shared_bytes_per_sm / resident_blocks;
      const int by_shared = share > static_cast<int>(fixed) ? (share - static_cast<int>(fixed)) / bytes_per_warp : 0;
      const int by_registers = std::max(1, limits.max_warps_per_sm) / resident_blocks;
      return std::min({by_shared, by_registers, max_block_warps});
    };
    const bool feasible = warps_fitting(1) >= groups_per_block;  // one block of one warp per group fits an SM
    int resident = std::min(blocks_per_sm, max_blocks_per_sm);
    int warps_per_group = warps_fitting(resident) / groups_per_block;
    if (warps_per_group < 1) {
      warps_per_group = 1;
      while (resident > 1 && warps_fitting(resident) < groups_per_block) --resident;
    }
    warps_per_group = std::clamp(std::min(warps_per_group, p.steps_per_split / 2), 1, std::max(1, max_block_warps / groups_per_block));
    p.warps_per_block = warps_per_group * groups_per_block;
    p.shared_bytes = fixed - limits.shared_bytes_per_block + static_cast<size_t>(p.warps_per_block) * bytes_per_warp;
    const int waves = (blocks_per_sm + resident - 1) / resident;
    const double fill = std::min(1.0, static_cast<double>(resident) * p.warps_per_block * bytes_per_warp / kFp8RingFullBytesPerSm);
    double cost = static_cast<double>(waves) * (resident * groups_per_block * p.steps_per_split / fill + kFp8RingWaveCostSteps);
    if (p.k_splits > 1) cost += kFp8RingSplitCostSteps;
    if (fused) cost += static_cast<double>(blocks_per_sm) * std::max(m, 1) * p.steps_per_split * 64 * kFp8RingQuantCostStepsPerValue;
    if (!feasible) cost *= 1e6;  // only if nothing fits (the launch then refuses the shape)
    if (best.num_blocks == 0 || cost < best_cost) {
      best = p;
      best_cost = cost;
    }
  };
  const int max_splits = limits.clusters ? kMaxSplits : 1;
  const int first_split = force_splits > 0 ? std::clamp(force_splits, 1, max_splits) : 1;
  const int last_split = force_splits > 0 ? first_split : max_splits;
  for (int splits = first_split; splits <= last_split; splits = force_splits > 0 ? splits + 1 : splits * 2) {
    if (splits > num_steps && splits != first_split) break;
    const int max_groups = fused ? std::min({kMaxGroupsPerBlock, num_groups, max_block_warps}) : 1;
    for (int groups = 1; groups <= max_groups; ++groups) consider(splits, groups);
  }
  return best;
}

namespace fp8_ring_internal {

Status fp8_ring_gemv(const uint8_t* xq, int64_t xq_stride, const float* x_scale, const uint8_t* wq, int64_t w_stride,
                     const float* w_scale, uint16_t* y, int64_t y_stride, int m, int n, int k, int force_splits,
                     cudaStream_t stream) {
  RingArgs a{};
  a.xq = xq;
  a.xq_stride = xq_stride;
  a.x_scale = x_scale;
  a.w = wq;
  a.w_stride = w_stride;
  a.w_scale = w_scale;
  a.y = y;
  a.y_stride = y_stride;
  a.m = m;
  a.n = n;
  a.k = k;
  if (m <= 8) return launch_ring<false, 1>(a, force_splits, stream, "fp8_gemv (ring) launch");
  return launch_ring<false, 2>(a, force_splits, stream, "fp8_gemv (ring) launch");
}

Status fp8_ring_gemv_from_fp16(const uint16_t* x, int64_t x_stride, const uint8_t* wq, int64_t w_stride,
                               const float* w_scale, uint16_t* y, int64_t y_stride, int m, int n, int k, uint8_t* xq_out,
                               int64_t xq_out_stride, float* x_scale_out, int force_splits, cudaStream_t stream) {
  RingArgs a{};
  a.x = x;
  a.x_stride = x_stride;
  a.w = wq;
  a.w_stride = w_stride;
  a.w_scale = w_scale;
  a.y = y;
  a.y_stride = y_stride;
  a.xq_out = xq_out;
  a.xq_out_stride = xq_out_stride;
  a.x_scale_out = x_scale_out;
  a.m = m;
  a.n = n;
  a.k = k;
  return launch_ring<true, 1>(a, force_splits, stream, "fp8_gemv_from_fp16 (ring) launch");
}

}  // namespace fp8_ring_internal
}  // namespace crosspoint::cuda
