// W4A16 small-batch kernel (M <= 8): weights as the mma A operand, activations as B; each warp
// streams every num_warps-th packed k chunk of one n16 block (weights, scales and activations)
// through its own cp.async ring in shared memory, several chunks ahead; the block's warps split
// K and meet in shared memory. Design and layout: w4a16_gemv.h, w4a16_gemm.h.
#include <cuda_fp16.h>

#include <algorithm>
#include <string>

#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/device_info.h"
#include "kernels/cuda/programmatic_launch.cuh"
#include "kernels/cuda/w4a16_fragments.cuh"
#include "kernels/cuda/w4a16_gemv.h"
#include "kernels/cuda/w4a16_pipeline.cuh"

namespace crosspoint::cuda {
namespace {

using w4a16_internal::cp_async_commit;
using w4a16_internal::cp_async_wait;
using w4a16_internal::dequant_word;
using w4a16_internal::mma_m16n8k16;

constexpr int kChunkK = 64;     // input rows per packed chunk: 4 mma k-steps, 512 B per n16 block
constexpr int kMaxWarps = kW4A16GemvMaxWarps;
constexpr int kMaxBlocksPerSm = 32;  // resident blocks per SM on sm_80..sm_90
// One token's activations of one chunk in the ring: 64 fp16 (128 B) + 16 B, so that the 8
// token rows one ldmatrix reads start in different banks.
constexpr int kTokenRowBytes = 144;
constexpr int kReductionBytesPerWarp = 32 * 16;  // a warp's C fragments, float4 per lane
// A ring slot: 512 B of weights, 128 B of scales, kM token rows.
__host__ __device__ constexpr int slot_bytes(int m) { return 512 + 128 + m * kTokenRowBytes; }
// Chunks in flight per warp: 8 (4 KB of weights) where the slots are small, fewer for more
// tokens so that a full SM's rings fit in its shared memory.
__host__ __device__ constexpr int ring_depth(int m) { return m <= 2 ? 8 : m <= 4 ? 6 : 4; }
// Dynamic shared memory of a block: every warp's ring, then its C fragments.
__host__ __device__ constexpr int shared_bytes_per_warp(int m) { return ring_depth(m) * slot_bytes(m) + kReductionBytesPerWarp; }

// The value unchanged, hidden from the compiler so that it keeps it in a register instead of
// recomputing it from the thread index at every use (which it did for the ring addresses).
__device__ __forceinline__ uint32_t opaque(uint32_t v) {
  asm volatile("mov.b32 %0, %0;\n" : "+r"(v));
  return v;
}
__device__ __forceinline__ uint64_t opaque(uint64_t v) {
  asm volatile("mov.b64 %0, %0;\n" : "+l"(v));
  return v;
}

// ldmatrix.x4 from a shared-memory address (see w4a16_pipeline.cuh's ldmatrix_x4 for the
// fragment order).
__device__ __forceinline__ void ldmatrix_x4_shared(uint32_t r[4], uint32_t address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address));
}

// acc[4] += scale * (W tile^T · x) over one 64-deep chunk of packed words `weight`, with the
// chunk's B fragments b[2j], b[2j+1] for k-step j (tokens = the MMA's 8 columns). The MMAs sum
// the unscaled (q - 8) products in fp32 (exact: |q - 8| <= 8 times an fp16 value); the group
// scale half2 (s[n = c], s[n = c + 8]) is applied once per chunk in fp32.
__device__ __forceinline__ void multiply_chunk(uint4 weight, uint32_t scale, const uint32_t b[8], float acc[4]) {
  float chunk_sum[4] = {};
  const uint32_t words[4] = {weight.x, weight.y, weight.z, weight.w};
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    half2 frag[4];
    dequant_word(words[j], frag);
    const uint32_t* f = reinterpret_cast<const uint32_t*>(frag);
    // A fragment (rows = n, cols = k): a0 (n=c, k0..), a1 (n=c+8, k0..), a2 (n=c, k0+8..),
    // a3 (n=c+8, k0+8..).
    const uint32_t a[4] = {f[0], f[2], f[1], f[3]};
    mma_m16n8k16(chunk_sum, a, b[2 * j], b[2 * j + 1]);
  }
  const float2 s = __half22float2(*reinterpret_cast<const half2*>(&scale));
  acc[0] = fmaf(s.x, chunk_sum[0], acc[0]);  // C rows n = c: tokens 2t, 2t+1
  acc[1] = fmaf(s.x, chunk_sum[1], acc[1]);
  acc[2] = fmaf(s.y, chunk_sum[2], acc[2]);  // C rows n = c + 8
  acc[3] = fmaf(s.y, chunk_sum[3], acc[3]);
}

// grid = N/16 blocks (block b owns output columns b*16 .. +15), blockDim = 32 * warps, kM tokens.
// Warp w multiplies chunks w, w + warps, ... of its block's columns through its own ring of
// shared memory, ring_depth(kM) chunks deep: per chunk every lane copies its 16 bytes of
// packed weights and its 4-byte scale pair into its own places of the slot, and lanes
// 0 .. 8 kM - 1 the kM x 128 bytes of activations (cp.async, one commit group per chunk). When
// the chunk's group has landed, each lane reads back its weights and scale and two ldmatrix.x4
// give the four k-steps' B fragments. The bytes in flight live in shared memory, not in
// registers, so the depth costs no occupancy. (Earlier forms held 4 chunks of weights in
// registers and read the activation pairs from global memory per lane: ~114 instructions per
// 512 weight bytes and ~50 % of the bandwidth on the 7B shapes, measured with ncu.) Every
// address advances by a fixed step per chunk.
template <int kM>
__global__ void __launch_bounds__(kMaxWarps * 32, 1)
    w4a16_gemv_kernel(const uint16_t* __restrict__ x, int64_t x_stride, const uint4* __restrict__ packed_weight,
                      const uint32_t* __restrict__ packed_scales, uint16_t* __restrict__ y, int64_t y_stride, int n,
                      int k, int group_size) {
  constexpr int kDepth = ring_depth(kM);
  constexpr int kSlotBytes = slot_bytes(kM);
  constexpr int kCopiesPerLane = (8 * kM + 31) / 32;  // 16-byte activation pieces per lane and chunk
  extern __shared__ __align__(16) unsigned char shared[];
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  const int num_warps = blockDim.x / 32;
  const int nb = blockIdx.x;
  const int num_chunks_total = k / kChunkK;
  // Chunk i of this warp is warp + i * num_warps: the block's warps read neighbouring
  // 512-byte pieces at the same time (measured on the H200: faster than one contiguous run
  // per warp, which scatters the reads over the block's whole weight slab).
  const int num_chunks = warp < num_chunks_total ? (num_chunks_total - warp + num_warps - 1) / num_warps : 0;  // may be 0

  // The ring's slot s: [512 B weights: lane l at 16 l][128 B scales: lane l at 4 l][kM token
  // rows of 144 B]. Shared addresses as 32-bit values. (Opaque: else the compiler rebuilds these
  // and the global addresses below from the thread index at every use.)
  const uint32_t ring = opaque(static_cast<uint32_t>(__cvta_generic_to_shared(shared + warp * kDepth * kSlotBytes)));
  const uint32_t weight_slot = ring + lane * 16;
  const uint32_t scale_slot = ring + 512 + lane * 4;

  // Global addresses of this lane's next copies, in bytes, each advanced by a fixed step
  // (num_warps chunks) per chunk. Weights: 16 bytes of packed words.
  uint64_t weight_addr = opaque(reinterpret_cast<uint64_t>(packed_weight + (static_cast<int64_t>(nb) * num_chunks_total + warp) * 32 + lane));
  const uint64_t weight_step = opaque(static_cast<uint64_t>(num_warps) * 32 * sizeof(uint4));
  // Scales: the half2 (s[n = c], s[n = c + 8]) of the chunk's group = chunk / chunks_per_group,
  // whose quotient (in the address) and remainder advance by num_warps chunks a step.
  const int chunks_per_group = group_size / kChunkK;
  const uint64_t group_stride = static_cast<uint64_t>(n / 16) * 8 * sizeof(uint32_t);
  uint64_t scale_addr = opaque(reinterpret_cast<uint64_t>(packed_scales + nb * 8 + lane / 4) + (warp / chunks_per_group) * group_stride);
  int group_remainder = warp % chunks_per_group;
  const int remainder_step = num_warps % chunks_per_group;
  const uint64_t scale_step = (num_warps / chunks_per_group) * group_stride;
  auto copy_weights = [&](uint32_t slot_offset) {
    asm volatile("cp.async.cg.shared.global.L2::256B [%0], [%1], 16;\n" ::"r"(weight_slot + slot_offset), "l"(weight_addr));
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(scale_slot + slot_offset), "l"(scale_addr));
    weight_addr += weight_step;
    scale_addr += scale_step;
    group_remainder += remainder_step;
    if (group_remainder >= chunks_per_group) {
      group_remainder -= chunks_per_group;
      scale_addr += group_stride;
    }
  };
  // Activations: lane l copies pieces p = l + 32 j < 8 kM, 16 bytes of token p / 8.
  uint64_t x_copy_addr[kCopiesPerLane];
  uint32_t x_copy_dst[kCopiesPerLane];
#pragma unroll
  for (int j = 0; j < kCopiesPerLane; ++j) {
    const int piece = min(lane + 32 * j, 8 * kM - 1);  // lanes past the last piece repeat it (same bytes, same place)
    x_copy_addr[j] = opaque(reinterpret_cast<uint64_t>(x + (piece / 8) * x_stride + warp * kChunkK + (piece % 8) * 8));
    x_copy_dst[j] = opaque(ring + 640 + (piece / 8) * kTokenRowBytes + (piece % 8) * 16);
  }
  const uint64_t x_copy_step = opaque(static_cast<uint64_t>(num_warps) * kChunkK * sizeof(uint16_t));
  auto copy_activations = [&](uint32_t slot_offset) {
#pragma unroll
    for (int j = 0; j < kCopiesPerLane; ++j) {
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(x_copy_dst[j] + slot_offset), "l"(x_copy_addr[j]));
      x_copy_addr[j] += x_copy_step;
    }
  };

  // Weights and scales of the first kDepth chunks in one group, before the wait: programmatic
  // launch (programmatic_launch.cuh) lets only what no kernel writes be read before it; x is
  // the previous kernel's output. Then the first chunks' activations, one group each. From
  // there on one group per chunk, empty past the end: chunk i's data is complete once at most
  // kDepth - 1 groups are younger than its own, for every i.
  const int prologue = min(kDepth, num_chunks);
  for (int s = 0; s < prologue; ++s) copy_weights(s * kSlotBytes);
  cp_async_commit();
  wait_for_prior_kernels();
  allow_dependent_launch();
#pragma unroll
  for (int s = 0; s < kDepth; ++s) {
    if (s < num_chunks) copy_activations(s * kSlotBytes);
    cp_async_commit();
  }
  // ldmatrix.x4 rows: lane l gives row l % 8 (token, clamped to kM - 1: columns >= kM of B feed
  // only C columns never stored) of matrix l / 8 = (k-step l / 16, k half (l / 8) % 2), so
  // r[0..3] = b0, b1 of the first k-step and b0, b1 of the second.
  const int matrix = lane / 8;
  const uint32_t b_rows = opaque(ring + 640 + min(lane % 8, kM - 1) * kTokenRowBytes + ((matrix / 2) * 16 + (matrix % 2) * 8) * 2);

  float acc[4] = {};
  // One chunk a trip, the slot a runtime offset: unrolling over the ring's slots let the
  // compiler hoist the next slots' reads and spill.
  uint32_t slot_offset = 0;
#pragma unroll 1
  for (int i = 0; i < num_chunks; ++i) {
    cp_async_wait<kDepth - 1>();  // this chunk's copies (this lane's) have landed ...
    __syncwarp();                 // ... and every lane's (the activations are shared by the warp)
    uint4 weight;
    uint32_t scale;
    asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(weight.x), "=r"(weight.y), "=r"(weight.z), "=r"(weight.w)
                 : "r"(weight_slot + slot_offset));
    asm volatile("ld.shared.u32 %0, [%1];\n" : "=r"(scale) : "r"(scale_slot + slot_offset));
    uint32_t b[8];
    ldmatrix_x4_shared(b, b_rows + slot_offset);           // k-steps 0, 1
    ldmatrix_x4_shared(b + 4, b_rows + slot_offset + 64);  // k-steps 2, 3
    multiply_chunk(weight, scale, b, acc);
    __syncwarp();  // every lane has read this slot before it is refilled
    if (i + kDepth < num_chunks) {
      copy_weights(slot_offset);
      copy_activations(slot_offset);
    }
    cp_async_commit();
    slot_offset = slot_offset == (kDepth - 1) * kSlotBytes ? 0 : slot_offset + kSlotBytes;
  }
  cp_async_wait<0>();  // nothing in flight into memory the reduction below reuses

  float4* warp_sums = reinterpret_cast<float4*>(shared + num_warps * kDepth * kSlotBytes);  // [warps][32 lanes], after the rings
  warp_sums[warp * 32 + lane] = make_float4(acc[0], acc[1], acc[2], acc[3]);
  __syncthreads();
  // 128 outputs per block (16 columns x 8 token slots): thread e sums element e of every
  // warp's fragments. Element e = lane' * 4 + r: column c' = lane'/4 (+8 for r >= 2), token
  // 2 * (lane' % 4) + (r & 1).
  const float* sums = reinterpret_cast<const float*>(warp_sums);
  for (int e = threadIdx.x; e < 128; e += blockDim.x) {
    const int src_lane = e / 4, r = e % 4;
    const int out_token = (src_lane % 4) * 2 + (r & 1);
    if (out_token >= kM) continue;
    float total = 0.f;
    for (int w = 0; w < num_warps; ++w) total += sums[w * 128 + e];  // fixed order: deterministic
    const int col = nb * 16 + src_lane / 4 + (r >= 2 ? 8 : 0);
    y[out_token * y_stride + col] = __half_as_ushort(__float2half_rn(total));
  }
}

// Warps of w4a16_gemv_kernel<kM> one SM holds: its register count, then its shared memory (the
// activation rings grow with kM).
template <int kM>
int max_warps_per_sm() {
  static const int warps = [] {
    cudaFuncAttributes attr{};
    int regs = 64;
    if (cudaFuncGetAttributes(&attr, w4a16_gemv_kernel<kM>) == cudaSuccess && attr.numRegs > 0) regs = attr.numRegs;
    cudaGetLastError();
    const int regs_per_warp = (regs * 32 + 255) / 256 * 256;  // allocated per warp in 256s
    constexpr int kSharedPerSm = 227 * 1024;  // sm_90's opt-in maximum (sm_80: 163 KB, still > 32 warps at kM = 8)
    return std::clamp(std::min(65536 / regs_per_warp, kSharedPerSm / shared_bytes_per_warp(kM)), 1, 64);
  }();
  return warps;
}

// Arguments already checked by w4a16_gemv. warps_per_block 0: w4a16_gemv_shape's choice.
template <int kM>
Status launch_gemv(const uint16_t* x, int64_t x_stride, const uint32_t* packed_weight, const uint32_t* packed_scales,
                   uint16_t* y, int64_t y_stride, int n, int k, int group_size, int warps_per_block, cudaStream_t stream) {
  W4A16GemvShape shape = w4a16_gemv_shape(n, k, cuda_device_info().num_sms, max_warps_per_sm<kM>());
  if (warps_per_block > 0) shape.warps_per_block = warps_per_block;
  const size_t shared_bytes = static_cast<size_t>(shape.warps_per_block) * shared_bytes_per_warp(kM);
  // Past 48 KB a block must opt in (32 warps at kM = 8 take ~160 KB).
  static const cudaError_t opt_in = cudaFuncSetAttribute(w4a16_gemv_kernel<kM>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                         kMaxWarps * shared_bytes_per_warp(kM));
  CROSSPOINT_CUDA_RETURN_IF_ERROR(opt_in, "w4a16_gemv shared-memory opt-in");
  CROSSPOINT_CUDA_RETURN_IF_ERROR(
      launch_programmatic(w4a16_gemv_kernel<kM>, dim3(shape.num_blocks), dim3(shape.warps_per_block * 32), shared_bytes, stream,
                          x, x_stride, reinterpret_cast<const uint4*>(packed_weight), packed_scales, y, y_stride, n, k,
                          group_size),
      "w4a16_gemv launch");
  return Status::ok();
}

}  // namespace

W4A16GemvShape w4a16_gemv_shape(int n, int k, int num_sms, int max_warps_per_sm) {
  W4A16GemvShape shape;
  shape.num_blocks = std::max(1, n / 16);
  const int num_chunks = std::max(1, k / kChunkK);
  num_sms = std::max(1, num_sms);
  // Blocks each SM must hold for the whole grid to be resident at once, then the warps
  // per block that fit beside them.
  const int blocks_per_sm = std::min((shape.num_blocks + num_sms - 1) / num_sms, kMaxBlocksPerSm);
  int warps = std::max(1, max_warps_per_sm) / blocks_per_sm;
  warps = std::min(warps, std::max(1, num_chunks / 2));  // >= 2 chunks per warp, where K has them
  shape.warps_per_block = std::clamp(warps, 1, kMaxWarps);
  return shape;
}

Status w4a16_gemv(const uint16_t* x, int64_t x_stride, const uint32_t* packed_weight,
                  const uint32_t* packed_scales, uint16_t* y, int64_t y_stride, int m, int n,
                  int k, int group_size, cudaStream_t stream, int warps_per_block) {
  if (m == 0) return Status::ok();
  if (m < 0 || m > kW4A16GemvKernelMaxRows) {
    return invalid_argument("w4a16_gemv: m = " + std::to_string(m) + " is outside 0.." + std::to_string(kW4A16GemvKernelMaxRows));
  }
  if (k <= 0 || k % kChunkK != 0) return unsupported("w4a16_gemv: k = " + std::to_string(k) + " is not a positive multiple of 64");
  if (k >= (1 << 22)) return unsupported("w4a16_gemv: k = " + std::to_string(k) + " is over the 4M rows the group lookup handles");
  if (n <= 0 || n % 16 != 0) return unsupported("w4a16_gemv: n = " + std::to_string(n) + " is not a positive multiple of 16");
  if (group_size == -1) group_size = k;
  if (group_size <= 0 || group_size % kChunkK != 0) {
    return unsupported("w4a16_gemv: group_size " + std::to_string(group_size) + " is not a multiple of 64");
  }
  if (x_stride < k || x_stride % 8 != 0) return invalid_argument("w4a16_gemv: x_stride must be a multiple of 8 and >= k");
  if (y_stride < n) return invalid_argument("w4a16_gemv: y_stride must be >= n");
  if (warps_per_block < 0 || warps_per_block > kMaxWarps) {
    return invalid_argument("w4a16_gemv: warps_per_block " + std::to_string(warps_per_block) + " is outside 0.." + std::to_string(kMaxWarps));
  }
  if (x == nullptr || packed_weight == nullptr || packed_scales == nullptr || y == nullptr) {
    return invalid_argument("w4a16_gemv: null pointer argument");
  }
  using Launch = Status (*)(const uint16_t*, int64_t, const uint32_t*, const uint32_t*, uint16_t*, int64_t, int, int, int, int,
                            cudaStream_t);
  static constexpr Launch kLaunch[kW4A16GemvKernelMaxRows] = {launch_gemv<1>, launch_gemv<2>, launch_gemv<3>, launch_gemv<4>,
                                                              launch_gemv<5>, launch_gemv<6>, launch_gemv<7>, launch_gemv<8>};
  return kLaunch[m - 1](x, x_stride, packed_weight, packed_scales, y, y_stride, n, k, group_size, warps_per_block, stream);
}

}  // namespace crosspoint::cuda
