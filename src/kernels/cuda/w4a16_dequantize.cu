// w4a16_dequantize: one warp per 16 x 64 slab of the packed weight (w4a16_gemm.h's layout):
// a 16-byte load per lane, the nibbles turned into fp16 pairs in registers, the slab staged in
// shared memory so that every global store is a full 16-byte vector along a row of W.
#include <cuda_fp16.h>

#include <string>

#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/w4a16_dequantize.h"

namespace crosspoint::cuda {
namespace {

constexpr int kWarpsPerBlock = 8;
constexpr int kSlabRows = 16, kSlabK = 64;
constexpr int kSlabPitch = kSlabK + 8;  // halves per staged row: 144 bytes keep both phases conflict-free

// (q_lo, q_hi) nibbles at bits 0 and 16 of `bits` as fp16 (q - z) * scale, with
// zero_sub = 1024 + z (1032: symmetric): 1024 + q is exact in fp16, so the subtraction is exact
// and the product is rounded once, as in the kernels' dequant_word(_zero).
__device__ __forceinline__ __half2 dequantize_pair(uint32_t bits, __half2 scale, __half2 zero_sub) {
  const uint32_t biased = (bits & 0x000F000Fu) | 0x64006400u;
  const __half2 q = __hsub2(*reinterpret_cast<const __half2*>(&biased), zero_sub);
  return __hmul2(q, scale);
}

__global__ void __launch_bounds__(kWarpsPerBlock * 32)
    w4a16_dequantize_kernel(const uint4* __restrict__ packed_weight, const uint32_t* __restrict__ packed_scales,
                            const uint32_t* __restrict__ packed_zeros, __half* __restrict__ w, int64_t w_stride,
                            int num_n_blocks, int num_k_chunks, int chunks_per_group) {
  __shared__ __align__(16) __half stage[kWarpsPerBlock][kSlabRows * kSlabPitch];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t slab = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + warp;
  if (slab >= static_cast<int64_t>(num_n_blocks) * num_k_chunks) return;
  const int nb = static_cast<int>(slab / num_k_chunks), kc = static_cast<int>(slab % num_k_chunks);
  const uint4 words = packed_weight[slab * 32 + lane];
  const int c = lane / 4, k0 = (lane % 4) * 2;
  __half* s = stage[warp];
  const uint32_t word[4] = {words.x, words.y, words.z, words.w};
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    // Groups of 32 rows (chunks_per_group 0): k16 steps 0, 1 in group 2 kc, 2, 3 in 2 kc + 1.
    const int group = chunks_per_group == 0 ? 2 * kc + j / 2 : kc / chunks_per_group;
    const uint32_t scale_bits = packed_scales[(static_cast<int64_t>(group) * num_n_blocks + nb) * 8 + lane / 4];
    const __half2 scales = *reinterpret_cast<const __half2*>(&scale_bits);
    const __half2 scale_c = __low2half2(scales), scale_c8 = __high2half2(scales);
    __half2 zero_c = __float2half2_rn(1032.0f), zero_c8 = zero_c;
    if (packed_zeros != nullptr) {
      const uint32_t zero_bits = packed_zeros[(static_cast<int64_t>(group) * num_n_blocks + nb) * 8 + lane / 4];
      const __half2 zeros = *reinterpret_cast<const __half2*>(&zero_bits);
      zero_c = __low2half2(zeros);
      zero_c8 = __high2half2(zeros);
    }
    const int col = j * 16 + k0;
    *reinterpret_cast<__half2*>(s + c * kSlabPitch + col) = dequantize_pair(word[j], scale_c, zero_c);
    *reinterpret_cast<__half2*>(s + c * kSlabPitch + col + 8) = dequantize_pair(word[j] >> 4, scale_c, zero_c);
    *reinterpret_cast<__half2*>(s + (c + 8) * kSlabPitch + col) = dequantize_pair(word[j] >> 8, scale_c8, zero_c8);
    *reinterpret_cast<__half2*>(s + (c + 8) * kSlabPitch + col + 8) = dequantize_pair(word[j] >> 12, scale_c8, zero_c8);
  }
  __syncwarp();
  // 16 rows x 8 vectors of 8 halves: four rows of 128 bytes per store instruction.
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int v = i * 32 + lane, row = v / 8, part = v % 8;
    const uint4 value = *reinterpret_cast<const uint4*>(s + row * kSlabPitch + part * 8);
    *reinterpret_cast<uint4*>(w + (static_cast<int64_t>(nb) * kSlabRows + row) * w_stride + kc * kSlabK + part * 8) =
        value;
  }
}

}  // namespace

Status w4a16_dequantize(const uint32_t* packed_weight, const uint32_t* packed_scales, int n, int k, int group_size,
                        uint16_t* w, int64_t w_stride, cudaStream_t stream, const uint32_t* packed_zeros) {
  if (k <= 0 || k % kSlabK != 0)
    return unsupported("w4a16_dequantize: k = " + std::to_string(k) + " is not a positive multiple of 64");
  if (n <= 0 || n % kSlabRows != 0)
    return unsupported("w4a16_dequantize: n = " + std::to_string(n) + " is not a positive multiple of 16");
  if (group_size == -1) group_size = k;
  if (group_size != 32 && (group_size <= 0 || (group_size % kSlabK != 0 && group_size != k)))
    return unsupported("w4a16_dequantize: group_size " + std::to_string(group_size) + " is not 32 or a multiple of 64");
  if (w_stride < k || w_stride % 8 != 0)
    return invalid_argument("w4a16_dequantize: w_stride must be a multiple of 8 and >= k");
  if (packed_weight == nullptr || packed_scales == nullptr || w == nullptr)
    return invalid_argument("w4a16_dequantize: null pointer argument");
  const int num_n_blocks = n / kSlabRows, num_k_chunks = k / kSlabK;
  // group_size == k with k not a multiple of 64 cannot reach here (k % 64 == 0 above).
  const int chunks_per_group = group_size / kSlabK;  // 0: groups of 32 rows, two a chunk
  const int64_t slabs = static_cast<int64_t>(num_n_blocks) * num_k_chunks;
  const int64_t blocks = (slabs + kWarpsPerBlock - 1) / kWarpsPerBlock;
  if (blocks > 0x7fffffff) return unsupported("w4a16_dequantize: weight too large for one launch");
  w4a16_dequantize_kernel<<<static_cast<unsigned>(blocks), kWarpsPerBlock * 32, 0, stream>>>(
      reinterpret_cast<const uint4*>(packed_weight), packed_scales, packed_zeros, reinterpret_cast<__half*>(w),
      w_stride, num_n_blocks, num_k_chunks, chunks_per_group);
  return last_launch_status("w4a16_dequantize launch");
}

}  // namespace crosspoint::cuda
