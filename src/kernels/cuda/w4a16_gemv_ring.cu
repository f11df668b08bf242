// W4A16 small-batch kernel with a per-lane shared-memory ring (W4A16GemvKernel::kSharedRing,
// kSharedRingDeep): the register kernel's arithmetic (w4a16_gemv_chunk.cuh) fed by cp.async
// instead of registers, so a warp keeps 8 or 16 chunks (4 or 8 KB) of weights in flight and an
// SM still holds ~40 warps; K optionally split over a thread-block cluster whose blocks add
// their partial sums through distributed shared memory. Design: w4a16_gemv.h.
//
// Registers (sm_90, -Xptxas -v, CUDA 13.0): 45 for one token tile (ring 8 and 16: ~42 warps
// per SM by registers), 59 / 57 for two; 0 bytes spilled.
#include <cooperative_groups.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <string>

#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/programmatic_launch.cuh"
#include "kernels/cuda/w4a16_gemv.h"
#include "kernels/cuda/w4a16_gemv_chunk.cuh"

namespace crosspoint::cuda {
namespace {

namespace cg = cooperative_groups;
using w4a16_internal::kGemvChunkK;
using w4a16_internal::multiply_chunk;

constexpr int kMaxWarps = 32;
constexpr int kMaxSplits = 8;         // portable cluster size
constexpr int kRingBytesPerSlot = 20;  // per lane: one 16-byte word group + one half2 scale pair
// Shared memory the plan may fill per SM: below the 228 KB maximum so that the driver's carveout
// leaves L1 room (~60 KB) for the activations, which every warp re-reads through L1.
constexpr int kSharedBudgetPerSm = 200 * 1024;
template <int kTiles>
constexpr int kSplitSumBytes = kTiles * 128 * 4;  // a split block's partial sums (C fragments of its n16 block)

struct RingArgs {
  const uint16_t* x;       // [M, K] fp16, row stride x_stride elements
  int64_t x_stride;
  const uint4* weight;     // [N/16][K/64][32 lanes] 16-byte word groups (w4a16_gemm.h)
  const uint32_t* scales;  // [groups][N/16][8] half2
  uint16_t* y;             // [M, N] fp16, row stride y_stride elements
  int64_t y_stride;
  int m, n, k, group_size;
  int k_splits;            // blocks (one cluster) per n16 block
  int chunks_per_split;    // 64-deep chunks of K per block
};

__device__ __forceinline__ uint32_t shared_address(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
// Weights: read once per step, so only L2 (cg) with the 256-byte prefetch (a warp's chunk
// is 512 contiguous bytes).
__device__ __forceinline__ void copy_16_async(void* shared_dst, const void* global_src) {
  asm volatile("cp.async.cg.shared.global.L2::256B [%0], [%1], 16;\n" ::"r"(shared_address(shared_dst)), "l"(global_src)
               : "memory");
}
__device__ __forceinline__ void copy_4_async(void* shared_dst, const void* global_src) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(shared_address(shared_dst)), "l"(global_src) : "memory");
}
__device__ __forceinline__ void commit_async() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int kPending>
__device__ __forceinline__ void wait_async() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
}

// grid = num_n_blocks * k_splits blocks of 32 * warps threads; block b: n16 block b / k_splits,
// K chunks [s * chunks_per_split, + chunks_per_split) with s = b % k_splits (its cluster
// rank). Warp w takes that slice's chunks w, w + warps, ... (neighbouring 512-byte pieces at
// once, as the register kernel). Each lane owns kDepth slots of the ring: it copies its own
// word group and scale into them and reads back only what it copied, so the only waits are
// its own cp.async groups (one per chunk) and no barrier is needed until the reduction.
template <int kDepth, int kTiles>
__global__ void __launch_bounds__(kMaxWarps * 32, 1) w4a16_gemv_ring_kernel(const RingArgs a) {
  static_assert((kDepth & (kDepth - 1)) == 0 && kDepth >= kTiles, "slots cycle by mask; sums reuse the slots");
  // [warps][kDepth][32 lanes] uint4 word groups, then [warps][kDepth][32 lanes] uint32 scales,
  // then (k_splits > 1 only) block_sums [kTiles * 128] fp32: this block's sums, read by rank 0.
  extern __shared__ uint4 ring[];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, num_warps = blockDim.x / 32;
  const int nb = blockIdx.x / a.k_splits, split = blockIdx.x % a.k_splits;
  const int num_chunks_total = a.k / kGemvChunkK, num_n_blocks = a.n / 16;
  const int split_begin = split * a.chunks_per_split;
  const int split_end = min(split_begin + a.chunks_per_split, num_chunks_total);
  const int first_chunk = split_begin + warp;
  const int num_chunks = first_chunk < split_end ? (split_end - first_chunk + num_warps - 1) / num_warps : 0;
  const int frag_row = lane / 4, frag_col = (lane % 4) * 2;

  uint4* slot_weight = ring + warp * kDepth * 32 + lane;  // slot s at [s * 32]
  uint32_t* slot_scale = reinterpret_cast<uint32_t*>(ring + num_warps * kDepth * 32) + warp * kDepth * 32 + lane;
  float* block_sums = reinterpret_cast<float*>(reinterpret_cast<uint32_t*>(ring + num_warps * kDepth * 32) + num_warps * kDepth * 32);
  const uint4* weight_lane = a.weight + (static_cast<int64_t>(nb) * num_chunks_total + first_chunk) * 32 + lane;
  const int64_t weight_step = static_cast<int64_t>(num_warps) * 32;
  // Group of a chunk by a multiply-high (as the register kernel): exact below 2^22 chunks.
  const uint32_t chunks_per_group = static_cast<uint32_t>(a.group_size / kGemvChunkK);
  const uint32_t group_magic = static_cast<uint32_t>((0x100000000ull + chunks_per_group - 1) / chunks_per_group);
  const int64_t scale_group_stride = static_cast<int64_t>(num_n_blocks) * 8;
  const uint32_t* scale_lane = a.scales + nb * 8 + frag_row;
  uint32_t issue_chunk = static_cast<uint32_t>(first_chunk);  // K chunk of the next copy
  int issued = 0;                                             // this warp's chunks copied so far
  // One commit group per call, empty past the last chunk, so that "all but kDepth - 1 groups
  // done" always means "chunk i has landed".
  auto issue_next = [&]() {
    if (issued < num_chunks) {
      const int slot = issued & (kDepth - 1);
      const uint32_t group = chunks_per_group == 1 ? issue_chunk : __umulhi(issue_chunk, group_magic);
      copy_16_async(slot_weight + slot * 32, weight_lane + issued * weight_step);
      copy_4_async(slot_scale + slot * 32, scale_lane + group * scale_group_stride);
      issue_chunk += static_cast<uint32_t>(num_warps);
    }
    ++issued;
    commit_async();
  };
#pragma unroll
  for (int s = 0; s < kDepth; ++s) issue_next();
  // Programmatic launch: only weights and scales (no kernel writes them) are read above.
  wait_for_prior_kernels();
  allow_dependent_launch();

  // B column c of token tile q is token 8 q + c; columns >= m read row m - 1 (valid memory)
  // and only feed C columns that are never stored.
  const uint32_t* x_row[kTiles];
#pragma unroll
  for (int q = 0; q < kTiles; ++q) {
    const int token = min(8 * q + frag_row, a.m - 1);
    x_row[q] = reinterpret_cast<const uint32_t*>(a.x + token * a.x_stride + first_chunk * kGemvChunkK + frag_col);
  }
  const int x_step = num_warps * (kGemvChunkK / 2);  // uint32 pairs from one chunk of this warp to the next
  uint32_t x_pairs[kTiles][8] = {};
  if (num_chunks > 0) {
#pragma unroll
    for (int q = 0; q < kTiles; ++q) {
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        x_pairs[q][2 * j] = __ldg(x_row[q] + j * 8);
        x_pairs[q][2 * j + 1] = __ldg(x_row[q] + j * 8 + 4);
      }
    }
  }

  float acc[kTiles][4] = {};
  for (int i = 0; i < num_chunks; ++i) {
    wait_async<kDepth - 1>();  // this lane's copies of chunk i have landed
    const int slot = i & (kDepth - 1);
    const uint4 weight = slot_weight[slot * 32];
    const uint32_t scale = slot_scale[slot * 32];
    const uint32_t* next_x[kTiles];
#pragma unroll
    for (int q = 0; q < kTiles; ++q) next_x[q] = x_row[q] + min(i + 1, num_chunks - 1) * x_step;
    multiply_chunk<kTiles>(weight, scale, x_pairs, next_x, acc);
    // The slot is refilled only after the MMAs (volatile asm, issued in order before this
    // copy) have consumed the words read from it.
    issue_next();
  }
  wait_async<0>();

  // Each warp's C fragments over its own first kTiles slots (lane-private addresses, its
  // copies all landed), then thread e adds element e of every warp in a fixed order.
  float4* warp_sums = reinterpret_cast<float4*>(slot_weight);
#pragma unroll
  for (int q = 0; q < kTiles; ++q) warp_sums[q * 32] = make_float4(acc[q][0], acc[q][1], acc[q][2], acc[q][3]);
  __syncthreads();
  // Element e = tile * 128 + lane' * 4 + r: column c' = lane'/4 (+8 for r >= 2), token
  // 8 tile + 2 (lane' % 4) + (r & 1).
  for (int e = threadIdx.x; e < 128 * kTiles; e += blockDim.x) {
    const int tile = e / 128, src_lane = e / 4 % 32, r = e % 4;
    float total = 0.f;
    for (int w = 0; w < num_warps; ++w) total += reinterpret_cast<const float*>(ring + (w * kDepth + tile) * 32 + src_lane)[r];
    const int out_token = tile * 8 + (src_lane % 4) * 2 + (r & 1);
    if (a.k_splits > 1) {
      block_sums[e] = total;
    } else if (out_token < a.m) {
      const int col = nb * 16 + src_lane / 4 + (r >= 2 ? 8 : 0);
      a.y[out_token * a.y_stride + col] = __half_as_ushort(__float2half_rn(total));
    }
  }
  if (a.k_splits > 1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    cg::cluster_group cluster = cg::this_cluster();
    cluster.sync();  // every rank's block_sums written and visible
    if (cluster.block_rank() == 0) {
      for (int e = threadIdx.x; e < 128 * kTiles; e += blockDim.x) {
        const int tile = e / 128, src_lane = e / 4 % 32, r = e % 4;
        const int out_token = tile * 8 + (src_lane % 4) * 2 + (r & 1);
        if (out_token >= a.m) continue;
        float total = 0.f;
        for (int rank = 0; rank < a.k_splits; ++rank) total += *cluster.map_shared_rank(block_sums + e, rank);  // rank order
        const int col = nb * 16 + src_lane / 4 + (r >= 2 ? 8 : 0);
        a.y[out_token * a.y_stride + col] = __half_as_ushort(__float2half_rn(total));
      }
    }
    cluster.sync();  // no rank exits while rank 0 still reads its shared memory
#else
    __trap();  // the host launches clusters only on sm_90 and newer
#endif
  }
}

bool device_has_clusters() {
  static const bool has = [] {
    int device = 0, major = 0;
    if (cudaGetDevice(&device) != cudaSuccess) return false;
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
    return major >= 9;
  }();
  return has;
}

// What an SM holds of w4a16_gemv_ring_kernel<kDepth, kTiles> on the current device; also lets
// the kernel take the dynamic shared memory its largest block needs (once).
template <int kDepth, int kTiles>
const W4A16GemvRingLimits& ring_limits() {
  static const W4A16GemvRingLimits limits = [] {
    W4A16GemvRingLimits l;
    int device = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&l.num_sms, cudaDevAttrMultiProcessorCount, device);
    int smem_per_sm = 0, reserved = 0, optin = 0;
    cudaDeviceGetAttribute(&smem_per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, device);
    cudaDeviceGetAttribute(&reserved, cudaDevAttrReservedSharedMemoryPerBlock, device);
    cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
    cudaDeviceGetAttribute(&l.max_blocks_per_sm, cudaDevAttrMaxBlocksPerMultiprocessor, device);
    auto* kernel = w4a16_gemv_ring_kernel<kDepth, kTiles>;
    cudaFuncAttributes attr{};
    int regs = 64;
    size_t static_smem = 0;
    if (cudaFuncGetAttributes(&attr, kernel) == cudaSuccess) {
      if (attr.numRegs > 0) regs = attr.numRegs;
      static_smem = attr.sharedSizeBytes;
    }
    const int regs_per_warp = (regs * 32 + 255) / 256 * 256;  // allocated per warp in 256s
    l.max_warps_per_sm = std::clamp(65536 / regs_per_warp, 1, 64);
    l.shared_bytes_per_warp = kDepth * 32 * kRingBytesPerSlot;
    l.shared_bytes_per_block = static_cast<int>(static_smem) + reserved;
    l.split_sum_bytes = kSplitSumBytes<kTiles>;
    // A block must also fit the per-block opt-in limit; the SM's share is the tighter one
    // except for a single block, which the planner caps by the same number.
    l.shared_bytes_per_sm = std::min(smem_per_sm > 0 ? smem_per_sm : 233472, kSharedBudgetPerSm);
    if (optin > 0 && optin + reserved < l.shared_bytes_per_sm) l.shared_bytes_per_sm = optin + reserved;
    l.clusters = device_has_clusters();
    const int max_dynamic = std::min(kMaxWarps * l.shared_bytes_per_warp + l.split_sum_bytes,
                                     optin > 0 ? optin - static_cast<int>(static_smem) : 48 * 1024);
    cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, max_dynamic);
    cudaGetLastError();  // an attribute refused here shows up as a launch error below
    return l;
  }();
  return limits;
}

template <int kDepth, int kTiles>
Status launch_ring(RingArgs a, const W4A16GemvOptions& options, cudaStream_t stream) {
  const W4A16GemvRingLimits& limits = ring_limits<kDepth, kTiles>();
  if (options.k_splits > 1 && !limits.clusters) {
    return unsupported("w4a16_gemv: k_splits " + std::to_string(options.k_splits) + " needs thread-block clusters (sm_90+)");
  }
  const W4A16GemvRingPlan plan = w4a16_gemv_ring_plan(a.n, a.k, limits, options.warps_per_block, options.k_splits);
  a.k_splits = plan.k_splits;
  a.chunks_per_split = plan.chunks_per_split;
  auto* kernel = w4a16_gemv_ring_kernel<kDepth, kTiles>;
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
  config.dynamicSmemBytes = static_cast<size_t>(plan.warps_per_block) * limits.shared_bytes_per_warp +
                            (plan.k_splits > 1 ? kSplitSumBytes<kTiles> : 0);
  config.stream = stream;
  config.attrs = attributes;
  config.numAttrs = static_cast<unsigned>(num_attributes);
  CROSSPOINT_CUDA_RETURN_IF_ERROR(cudaLaunchKernelEx(&config, kernel, a), "w4a16_gemv ring launch");
  return Status::ok();
}

}  // namespace

W4A16GemvRingPlan w4a16_gemv_ring_plan(int n, int k, const W4A16GemvRingLimits& limits, int force_warps,
                                       int force_splits) {
  const int num_n_blocks = std::max(1, n / 16);
  const int num_chunks = std::max(1, k / kGemvChunkK);
  const int num_sms = std::max(1, limits.num_sms);
  const int max_blocks_per_sm = std::clamp(limits.max_blocks_per_sm, 1, 32);
  const int bytes_per_warp = std::max(1, limits.shared_bytes_per_warp);
  // Warps per block that fit beside blocks_per_sm - 1 others on one SM.
  auto warps_that_fit = [&](int blocks_per_sm, int k_splits) {
    const int fixed = limits.shared_bytes_per_block + (k_splits > 1 ? limits.split_sum_bytes : 0);
    const int by_registers = std::max(1, limits.max_warps_per_sm) / blocks_per_sm;
    const int by_shared = (limits.shared_bytes_per_sm / blocks_per_sm - fixed) / bytes_per_warp;
    return std::clamp(std::min(by_registers, by_shared), 1, kMaxWarps);
  };
  auto make = [&](int splits) {
    W4A16GemvRingPlan p;
    p.num_n_blocks = num_n_blocks;
    p.chunks_per_split = (num_chunks + splits - 1) / splits;
    p.k_splits = (num_chunks + p.chunks_per_split - 1) / p.chunks_per_split;  // no empty slice
    p.num_blocks = num_n_blocks * p.k_splits;
    const int blocks_per_sm = std::min((p.num_blocks + num_sms - 1) / num_sms, max_blocks_per_sm);
    p.warps_per_block = std::min(warps_that_fit(blocks_per_sm, p.k_splits), std::max(1, p.chunks_per_split / 2));
    if (force_warps > 0) p.warps_per_block = std::min({force_warps, kMaxWarps, warps_that_fit(1, p.k_splits)});
    return p;
  };
  if (force_splits > 0) return make(std::clamp(force_splits, 1, limits.clusters ? kMaxSplits : 1));
  W4A16GemvRingPlan best;
  double best_cost = 0;
  for (int splits = 1; splits <= (limits.clusters ? kMaxSplits : 1); splits *= 2) {
    if (splits > num_chunks) break;
    const W4A16GemvRingPlan p = make(splits);
    const int blocks_per_sm = (p.num_blocks + num_sms - 1) / num_sms;  // on the busiest SM
    const int resident_blocks = std::min(blocks_per_sm, max_blocks_per_sm);
    const int waves = (blocks_per_sm + resident_blocks - 1) / resident_blocks;
    // Weight bytes in flight per warp: 16 of every 20 bytes of its ring.
    const double in_flight = static_cast<double>(resident_blocks) * p.warps_per_block * bytes_per_warp * 16 / kRingBytesPerSlot;
    const double fill = std::min(1.0, in_flight / kW4A16RingFullBytesPerSm);
    const double cost = waves * (static_cast<double>(resident_blocks) * p.chunks_per_split / fill + kW4A16RingWaveCostChunks) +
                        (p.k_splits > 1 ? kW4A16RingSplitCostChunks : 0);
    if (best.num_blocks == 0 || cost < best_cost) {
      best = p;
      best_cost = cost;
    }
  }
  return best;
}

namespace w4a16_internal {

Status launch_gemv_ring(const W4A16GemvOptions& options, const uint16_t* x, int64_t x_stride,
                        const uint32_t* packed_weight, const uint32_t* packed_scales, uint16_t* y, int64_t y_stride,
                        int m, int n, int k, int group_size, cudaStream_t stream) {
  RingArgs a{};
  a.x = x;
  a.x_stride = x_stride;
  a.weight = reinterpret_cast<const uint4*>(packed_weight);
  a.scales = packed_scales;
  a.y = y;
  a.y_stride = y_stride;
  a.m = m;
  a.n = n;
  a.k = k;
  a.group_size = group_size;
  const bool deep = options.kernel == W4A16GemvKernel::kSharedRingDeep;
  if (m <= 8) return deep ? launch_ring<16, 1>(a, options, stream) : launch_ring<8, 1>(a, options, stream);
  return deep ? launch_ring<16, 2>(a, options, stream) : launch_ring<8, 2>(a, options, stream);
}

}  // namespace w4a16_internal
}  // namespace crosspoint::cuda
