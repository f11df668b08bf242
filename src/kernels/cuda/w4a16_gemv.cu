// W4A16 small-batch kernel (M <= 8): weights as the mma A operand, activations as B; each
// warp streams every num_warps-th packed k chunk of one n16 block from HBM straight into
// registers, kDepth chunks ahead; the block's warps split K and meet in shared memory.
// Design and layout: w4a16_gemv.h, w4a16_gemm.h.
#include <cuda_fp16.h>

#include <algorithm>
#include <string>
#include <type_traits>

#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/device_info.h"
#include "kernels/cuda/programmatic_launch.cuh"
#include "kernels/cuda/w4a16_fragments.cuh"
#include "kernels/cuda/w4a16_gemv.h"
#include "kernels/cuda/w4a16_pipeline.cuh"

namespace crosspoint::cuda {
namespace {

using w4a16_internal::dequant_word;
using w4a16_internal::dequant_word_zero;
using w4a16_internal::mma_m16n8k16;

constexpr int kChunkK = 64;    // input rows per packed chunk: 4 mma k-steps, 512 B per n16 block
constexpr int kMaxWarps = 32;  // warps per block at most (1024 threads)
constexpr int kMaxThreads = kMaxWarps * 32;
// Weight chunks in flight per warp, chosen on the H200 (4 or 8 deep, activations 1, 2 or 4
// ahead; docs/cuda.md): more registers cost more warps than the deeper pipeline gains.
constexpr int kDepth = 4;
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
// further); with kReloadX each pair is reloaded from `next_x` (the next chunk's) as soon as its
// MMA has read it, so the activations run one chunk ahead in 8 registers. The MMAs sum the unscaled (q - 8)
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

template <bool kZeros, bool kHalfGroups, bool kReloadX>
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
    if constexpr (kReloadX) {
      x_pairs[2 * j] = __ldg(next_x + j * 8);
      x_pairs[2 * j + 1] = __ldg(next_x + j * 8 + 4);
    }
  }
  add_scaled(kHalfGroups ? p.scale2 : p.scale, chunk_sum, acc);
}

// With several tokens, eight 4-byte loads of a chunk's B fragments touch one 128-byte line per
// token each: at m = 8, 64 L1 wavefronts a chunk, more than the rest of the chunk costs. So for
// m >= 2 each warp copies its chunks' activations (m rows x 128 bytes) into a ring of its own in
// shared memory, kDepth chunks ahead with the weights (cp.async through L1, where every block of
// the SM finds the same x; one group per chunk), and reads a chunk's fragments with two
// ldmatrix.x4 (rows padded to 144 bytes: conflict-free).
constexpr int kXRowBytes = kChunkK * 2 + 16;
constexpr int kXSlotBytes = kW4A16GemvKernelMaxRows * kXRowBytes;  // a constant stride: immediate offsets
constexpr int kXRingBytesPerWarp = kDepth * kXSlotBytes;

struct ActivationRing {
  uint32_t dst[2] = {};       // shared-window addresses in slot 0 of this lane's pieces (lane, lane + 32)
  uint32_t src[2] = {};       // their next chunk's place in x, in fp16 elements
  bool copies[2] = {};        // whether the piece exists (m * 8 pieces a chunk)
  uint32_t src_step = 0;      // elements from one of the warp's chunks to its next
  uint32_t read_address = 0;  // ldmatrix row piece in slot 0: row min(lane % 8, m - 1), k (lane / 8) * 8

  __device__ void init(const void* warp_ring, int lane, int warp, int num_warps, int m, int64_t x_stride) {
    const uint32_t slot0 = static_cast<uint32_t>(__cvta_generic_to_shared(warp_ring));
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int piece = lane + 32 * h, row = piece / 8, col = piece % 8;
      copies[h] = row < m;
      src[h] = static_cast<uint32_t>(row * x_stride + warp * kChunkK + col * 8);
      dst[h] = slot0 + static_cast<uint32_t>(row * kXRowBytes + col * 16);
    }
    src_step = static_cast<uint32_t>(num_warps * kChunkK);
    read_address = slot0 + static_cast<uint32_t>(min(lane % 8, m - 1) * kXRowBytes + (lane / 8) * 16);
  }
  // Copies the next chunk's rows into `slot` and commits them as one group (empty past the end).
  __device__ __forceinline__ void copy(const uint16_t* x, int slot, bool exists) {
    __syncwarp();  // every lane's ldmatrix of this slot's last chunk is done before it is overwritten
    if (exists) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        if (copies[h]) w4a16_internal::cp_async_16_l1(dst[h] + slot * kXSlotBytes, x + src[h]);
        src[h] += src_step;
      }
    }
    w4a16_internal::cp_async_commit();
  }
  // The B fragments of the chunk in `slot`, once its copies (kDepth - 1 groups back) have landed.
  __device__ __forceinline__ void read(int slot, uint32_t* x_pairs) const {
    w4a16_internal::cp_async_wait<kDepth - 1>();
    __syncwarp();
    const uint32_t p = read_address + slot * kXSlotBytes;
    w4a16_internal::ldmatrix_x4(x_pairs, p);           // k 0-31: b0, b1 of k16 steps 0 and 1
    w4a16_internal::ldmatrix_x4(x_pairs + 4, p + 64);  // k 32-63: steps 2 and 3
  }
};

// grid = N/16 blocks (block b owns output columns b*16 .. +15), blockDim = 32 * warps.
// Warp w multiplies chunks w, w + warps, ... of its block's columns, for the m <= 8 tokens
// that are the MMA's 8 columns. Each lane's next weight, scale and activation addresses move
// by a fixed step per chunk, and the loop over all but the last chunks has no bounds checks:
// the kernel is bound by instruction issue, so every index computation counts.
template <bool kZeros, bool kHalfGroups, bool kStagedX>
__global__ void __launch_bounds__(kMaxThreads, 1)
    w4a16_gemv_kernel(const uint16_t* __restrict__ x, int64_t x_stride, const uint4* __restrict__ packed_weight,
                      const uint32_t* __restrict__ packed_scales, const uint32_t* __restrict__ packed_zeros,
                      uint16_t* __restrict__ y, int64_t y_stride, int m, int n, int k, int group_size) {
  // [warps][32 lanes] fp32 C fragments, then (kStagedX) the warps' activation rings
  extern __shared__ float4 warp_sums[];
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  const int num_warps = blockDim.x / 32;
  const int nb = blockIdx.x;
  const int num_n_blocks = n / 16;
  const int num_chunks_total = k / kChunkK;
  // Chunk i of this warp is warp + i * num_warps: the block's warps read neighbouring
  // 512-byte pieces at the same time (faster on the H200 than one contiguous run per warp,
  // which scatters the reads over the block's whole weight slab).
  const int num_chunks =
      warp < num_chunks_total ? (num_chunks_total - warp + num_warps - 1) / num_warps : 0;  // may be 0
  const int frag_row = lane / 4;        // c: A/C row (n), B column (token)
  const int frag_col = (lane % 4) * 2;  // k0: A/B k offset; C column 2t

  // Offsets (32-bit, from the kernel's arguments: fewer registers than pointers) of this
  // lane's 16-byte word group of the next chunk to load.
  uint32_t weight_next = (static_cast<uint32_t>(nb) * num_chunks_total + warp) * 32 + lane;
  const uint32_t weight_step = num_warps * 32;
  // Scales of the chunks in load order: group = chunk / chunks_per_group by a multiply-high
  // with ceil(2^32 / chunks_per_group), exact while chunk * chunks_per_group < 2^32; with
  // groups of 32 rows, groups 2 chunk and 2 chunk + 1.
  const uint32_t chunks_per_group = kHalfGroups ? 1u : static_cast<uint32_t>(group_size / kChunkK);
  const bool one_chunk_groups = chunks_per_group == 1;
  const uint32_t group_magic = static_cast<uint32_t>((0x100000000ull + chunks_per_group - 1) / chunks_per_group);
  const uint32_t scale_group_stride = static_cast<uint32_t>(num_n_blocks) * 8;
  const uint32_t scale_lane = nb * 8 + frag_row;       // zero points: the same layout
  uint32_t scale_chunk = static_cast<uint32_t>(warp);  // the chunk whose parameters load next
  auto next_params = [&]() {
    ChunkParams p;
    uint32_t group;
    if constexpr (kHalfGroups) {
      group = 2 * scale_chunk;
    } else {
      group = one_chunk_groups ? scale_chunk : __umulhi(scale_chunk, group_magic);
    }
    scale_chunk += static_cast<uint32_t>(num_warps);
    const uint32_t offset = scale_lane + group * scale_group_stride;
    p.scale = __ldg(packed_scales + offset);
    if constexpr (kZeros) p.zero = __ldg(packed_zeros + offset);
    if constexpr (kHalfGroups) {
      p.scale2 = __ldg(packed_scales + offset + scale_group_stride);
      if constexpr (kZeros) p.zero2 = __ldg(packed_zeros + offset + scale_group_stride);
    }
    return p;
  };

  // Weights and scales kDepth chunks ahead (they come from HBM).
  uint4 weight[kDepth];        // packed words j = 0..3 of this lane, per chunk in flight
  ChunkParams params[kDepth];  // that chunk's group scale (and zero point, second group)
#pragma unroll
  for (int s = 0; s < kDepth; ++s) {
    if (s < num_chunks) {
      weight[s] = load_streaming_16(packed_weight + weight_next);
      weight_next += weight_step;
      params[s] = next_params();
    }
  }
  // Programmatic launch (programmatic_launch.cuh): only the weights and scales, which no
  // kernel writes, are read before this; x is the previous kernel's output.
  wait_for_prior_kernels();
  allow_dependent_launch();

  // B column c is token c; columns >= m read row m-1 (valid memory) and only feed C columns
  // that are never stored. Unstaged (m = 1), activations run one chunk ahead (L1/L2-resident):
  // x_pairs holds the current chunk's, x_next points at the next chunk's.
  const uint32_t* x_pairs_base = reinterpret_cast<const uint32_t*>(x);
  uint32_t x_next = static_cast<uint32_t>((min(frag_row, m - 1) * x_stride + warp * kChunkK + frag_col) / 2);
  const uint32_t x_step = num_warps * (kChunkK / 2);  // uint32 pairs from chunk i to i + 1
  uint32_t x_pairs[8] = {};
  ActivationRing ring;
  if constexpr (kStagedX) {
    ring.init(reinterpret_cast<uint8_t*>(warp_sums + num_warps * 32) + warp * kXRingBytesPerWarp, lane, warp, num_warps,
              m, x_stride);
#pragma unroll
    for (int s = 0; s < kDepth; ++s) ring.copy(x, s, s < num_chunks);
  } else if (num_chunks > 0) {  // a warp with no chunks (more warps than chunks) reads nothing
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      x_pairs[2 * j] = __ldg(x_pairs_base + x_next + j * 8);
      x_pairs[2 * j + 1] = __ldg(x_pairs_base + x_next + j * 8 + 4);
    }
    x_next += x_step;
  }

  float acc[4] = {};
  int i = 0;
  // Every chunk of these rounds has a next chunk and a chunk kDepth ahead to load.
  for (; i + 2 * kDepth <= num_chunks; i += kDepth) {
#pragma unroll
    for (int s = 0; s < kDepth; ++s) {
      if constexpr (kStagedX) {
        ring.read(s, x_pairs);
        multiply_chunk<kZeros, kHalfGroups, false>(weight[s], params[s], x_pairs, nullptr, acc);
        ring.copy(x, s, true);
      } else {
        multiply_chunk<kZeros, kHalfGroups, true>(weight[s], params[s], x_pairs, x_pairs_base + x_next, acc);
        x_next += x_step;
      }
      weight[s] = load_streaming_16(packed_weight + weight_next);
      weight_next += weight_step;
      params[s] = next_params();
    }
  }
  // The last 2 * kDepth - 1 chunks at most, with checks.
  for (; i < num_chunks; i += kDepth) {
#pragma unroll
    for (int s = 0; s < kDepth; ++s) {
      if (i + s < num_chunks) {
        const bool refill = i + s + kDepth < num_chunks;
        if constexpr (kStagedX) {
          ring.read(s, x_pairs);
          multiply_chunk<kZeros, kHalfGroups, false>(weight[s], params[s], x_pairs, nullptr, acc);
          ring.copy(x, s, refill);
        } else {
          // The last chunk reloads its own activations (valid memory, never used).
          const bool has_next = i + s + 1 < num_chunks;
          multiply_chunk<kZeros, kHalfGroups, true>(weight[s], params[s], x_pairs,
                                                    x_pairs_base + (has_next ? x_next : x_next - x_step), acc);
          if (has_next) x_next += x_step;
        }
        if (refill) {
          weight[s] = load_streaming_16(packed_weight + weight_next);
          weight_next += weight_step;
          params[s] = next_params();
        }
      }
    }
  }
  if constexpr (kStagedX) w4a16_internal::cp_async_wait<0>();  // no copy outlives the block

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

// Warps one SM holds of w4a16_gemv_kernel: its registers, and (kStagedX) shared memory for
// each warp's reduction slot and activation ring.
template <bool kZeros, bool kHalfGroups, bool kStagedX>
int max_warps_per_sm() {
  static const int warps_by_registers = [] {
    cudaFuncAttributes attr{};
    int regs = 64;
    if (cudaFuncGetAttributes(&attr, w4a16_gemv_kernel<kZeros, kHalfGroups, kStagedX>) == cudaSuccess &&
        attr.numRegs > 0)
      regs = attr.numRegs;
    const int regs_per_warp = (regs * 32 + 255) / 256 * 256;  // allocated per warp in 256s
    return std::clamp(65536 / regs_per_warp, 1, 64);
  }();
  if (!kStagedX) return warps_by_registers;
  const int bytes_per_warp = 32 * static_cast<int>(sizeof(float4)) + kXRingBytesPerWarp;
  return std::clamp(cuda_device_info().shared_memory_per_sm / bytes_per_warp, 1, warps_by_registers);
}

template <bool kZeros, bool kHalfGroups, bool kStagedX>
Status launch_gemv(const uint16_t* x, int64_t x_stride, const uint32_t* packed_weight, const uint32_t* packed_scales,
                   const uint32_t* packed_zeros, uint16_t* y, int64_t y_stride, int m, int n, int k, int group_size,
                   int warps_per_block, cudaStream_t stream);

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

Status w4a16_gemv(const uint16_t* x, int64_t x_stride, const uint32_t* packed_weight, const uint32_t* packed_scales,
                  uint16_t* y, int64_t y_stride, int m, int n, int k, int group_size, cudaStream_t stream,
                  int warps_per_block, const uint32_t* packed_zeros) {
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
  // The kernel addresses weights (16-byte words) and activations (fp16 pairs) by 32-bit offsets.
  if (static_cast<int64_t>(n) * k >= (int64_t{1} << 37))
    return unsupported("w4a16_gemv: n x k = " + std::to_string(static_cast<int64_t>(n) * k) + " is over 2^37 weights");
  if ((m - 1) * x_stride + k >= (int64_t{1} << 32))
    return unsupported("w4a16_gemv: x spans over 2^32 elements (x_stride " + std::to_string(x_stride) + ")");
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
  // One token reads each activation line once per load: the ring would only add work.
  const bool staged = m >= 2 && reinterpret_cast<uintptr_t>(x) % 16 == 0;
  auto launch = [&](auto zeros, auto halves) {
    constexpr bool kZeros = decltype(zeros)::value, kHalves = decltype(halves)::value;
    return staged ? launch_gemv<kZeros, kHalves, true>(x, x_stride, packed_weight, packed_scales, packed_zeros, y,
                                                       y_stride, m, n, k, group_size, warps_per_block, stream)
                  : launch_gemv<kZeros, kHalves, false>(x, x_stride, packed_weight, packed_scales, packed_zeros, y,
                                                        y_stride, m, n, k, group_size, warps_per_block, stream);
  };
  using Yes = std::true_type;
  using No = std::false_type;
  if (packed_zeros != nullptr) return half_groups ? launch(Yes{}, Yes{}) : launch(Yes{}, No{});
  return half_groups ? launch(No{}, Yes{}) : launch(No{}, No{});
}

namespace {

// Arguments already checked by w4a16_gemv. warps_per_block 0: w4a16_gemv_shape's choice.
template <bool kZeros, bool kHalfGroups, bool kStagedX>
Status launch_gemv(const uint16_t* x, int64_t x_stride, const uint32_t* packed_weight, const uint32_t* packed_scales,
                   const uint32_t* packed_zeros, uint16_t* y, int64_t y_stride, int m, int n, int k, int group_size,
                   int warps_per_block, cudaStream_t stream) {
  auto* kernel = w4a16_gemv_kernel<kZeros, kHalfGroups, kStagedX>;
  const size_t bytes_per_warp = 32 * sizeof(float4) + (kStagedX ? kXRingBytesPerWarp : 0);
  const int max_block_bytes = std::max(cuda_device_info().shared_memory_per_block_optin, 48 << 10);
  if (kStagedX) {  // rings of up to 32 warps need more than the default 48 KB a block
    static const bool allowed =
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, max_block_bytes) == cudaSuccess;
    if (!allowed) cudaGetLastError();
  }
  W4A16GemvShape shape =
      w4a16_gemv_shape(n, k, cuda_device_info().num_sms, max_warps_per_sm<kZeros, kHalfGroups, kStagedX>());
  if (warps_per_block > 0) shape.warps_per_block = warps_per_block;
  shape.warps_per_block = std::clamp(shape.warps_per_block, 1,
                                     std::min<int>(kMaxWarps, static_cast<int>(max_block_bytes / bytes_per_warp)));
  const size_t smem_bytes = static_cast<size_t>(shape.warps_per_block) * bytes_per_warp;
  CROSSPOINT_CUDA_RETURN_IF_ERROR(
      launch_programmatic(kernel, dim3(shape.num_blocks), dim3(shape.warps_per_block * 32), smem_bytes, stream, x,
                          x_stride, reinterpret_cast<const uint4*>(packed_weight), packed_scales, packed_zeros, y,
                          y_stride, m, n, k, group_size),
      "w4a16_gemv launch");
  return Status::ok();
}

}  // namespace
}  // namespace crosspoint::cuda
