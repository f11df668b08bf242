// Load-time copy of a repacked W4A16 weight into CUTLASS's reordered int4 layout.
#include <string>
#include <vector>

#include "common/thread_pool.h"
#include "kernels/cuda/cutlass_w4a16_gemm.h"
#include "kernels/cuda/cutlass_w4a16_kernels.h"

#if defined(CROSSPOINT_CUTLASS_SM90)
#include "kernels/cuda/cutlass_w4a16_gemm.cuh"
#endif

namespace crosspoint::cuda {
namespace {

// Inverse of w4a16_repack's word layout (w4a16_gemm.h): the (k, n) of nibble p of word
// ((nb * K/64 + kc) * 32 + lane) * 4 + j.
struct PackedCoord {
  int k, n;
};
PackedCoord packed_coord(int nb, int kc, int lane, int j, int nibble) {
  const int c = nb * 16 + lane / 4;
  const int k0 = kc * 64 + j * 16 + (lane % 4) * 2;
  const int dk[8] = {0, 8, 0, 8, 1, 9, 1, 9};
  const int dn[8] = {0, 0, 8, 8, 0, 0, 8, 8};
  return {k0 + dk[nibble], c + dn[nibble]};
}

}  // namespace

namespace cutlass_w4a16 {
int64_t reordered_offset(int n, int k, int slice, int num_out, int k_slice, int slices) {
#if defined(CROSSPOINT_CUTLASS_SM90)
  return static_cast<int64_t>(weight_layout(num_out, k_slice, slices)(n, k, slice));
#else
  return -1;  // no reordered layout in this build
#endif
}
}  // namespace cutlass_w4a16

Result<CutlassW4A16Weight> cutlass_w4a16_pack(const W4A16PackedWeight& packed) {
#if !defined(CROSSPOINT_CUTLASS_SM90)
  return unsupported("cutlass_w4a16_pack: this build has no sm_90a kernels (CMAKE_CUDA_ARCHITECTURES without 90a)");
#else
  const int k = packed.num_in_features, n = packed.num_out_features;
  if (k % 64 != 0 || n % 64 != 0 || packed.weight.size() != static_cast<size_t>(n) * k / 8) {
    return unsupported("cutlass_w4a16_pack: [" + std::to_string(n) + ", " + std::to_string(k) +
                       "] needs N and K multiples of 64 and a whole packed weight");
  }
  CutlassW4A16Weight out;
  out.num_in_features = k;
  out.num_out_features = n;
  out.group_size = packed.group_size;
  // The layout is one atom's permutation repeated over tiles: offsets of the atom's elements
  // and of every tile's origin, instead of evaluating the layout per element.
  const auto layout = cutlass_w4a16::weight_layout(n, k, 1);
  constexpr int kAtomN = cute::size<0>(cutlass_w4a16::ReorderAtom{});
  constexpr int kAtomK = cute::size<1>(cutlass_w4a16::ReorderAtom{});
  static_assert(64 % kAtomN == 0 && 64 % kAtomK == 0, "the reordering atom must tile 64 x 64");
  std::vector<int32_t> atom(kAtomN * kAtomK);
  for (int an = 0; an < kAtomN; ++an)
    for (int ak = 0; ak < kAtomK; ++ak) atom[an * kAtomK + ak] = static_cast<int32_t>(layout(an, ak, 0));
  const int tiles_n = n / kAtomN, tiles_k = k / kAtomK;
  std::vector<int64_t> tile_base(static_cast<size_t>(tiles_n) * tiles_k);
  for (int tn = 0; tn < tiles_n; ++tn)
    for (int tk = 0; tk < tiles_k; ++tk)
      tile_base[static_cast<size_t>(tn) * tiles_k + tk] = static_cast<int64_t>(layout(tn * kAtomN, tk * kAtomK, 0));

  out.weight.assign(static_cast<size_t>(n) * k / 2, 0);
  const int num_k_chunks = k / 64;
  // 64 channels per task: an atom (an even number of elements, at an even offset) never
  // leaves its kAtomN rows, so no byte holds nibbles of two tasks.
  global_thread_pool().parallel_for(static_cast<size_t>(n / 64), [&](size_t b_begin, size_t b_end) {
    for (size_t nb = b_begin * 4; nb < b_end * 4; ++nb) {
      for (int kc = 0; kc < num_k_chunks; ++kc) {
        for (int lane = 0; lane < 32; ++lane) {
          for (int j = 0; j < 4; ++j) {
            const uint32_t word = packed.weight[((nb * num_k_chunks + kc) * 32 + lane) * 4 + j];
            for (int p = 0; p < 8; ++p) {
              const PackedCoord at = packed_coord(static_cast<int>(nb), kc, lane, j, p);
              const int64_t offset = tile_base[static_cast<size_t>(at.n / kAtomN) * tiles_k + at.k / kAtomK] +
                                     atom[(at.n % kAtomN) * kAtomK + at.k % kAtomK];
              const uint8_t q = static_cast<uint8_t>(((word >> (4 * p)) & 0xFu) ^ 0x8u);  // q - 8 as signed int4
              out.weight[offset / 2] |= static_cast<uint8_t>(q << (4 * (offset % 2)));
            }
          }
        }
      }
    }
  });
  const int num_groups = static_cast<int>(packed.scales.size() / (static_cast<size_t>(n) / 16 * 8));
  out.scales.resize(static_cast<size_t>(num_groups) * n);
  for (int g = 0; g < num_groups; ++g) {
    for (int nb = 0; nb < n / 16; ++nb) {
      for (int c = 0; c < 8; ++c) {
        const uint32_t pair = packed.scales[(static_cast<size_t>(g) * (n / 16) + nb) * 8 + c];
        out.scales[static_cast<size_t>(g) * n + nb * 16 + c] = static_cast<uint16_t>(pair & 0xFFFFu);
        out.scales[static_cast<size_t>(g) * n + nb * 16 + c + 8] = static_cast<uint16_t>(pair >> 16);
      }
    }
  }
  return out;
#endif
}

Result<int> cutlass_w4a16_weight_at(const CutlassW4A16Weight& w, int n, int k) {
#if !defined(CROSSPOINT_CUTLASS_SM90)
  return unsupported("cutlass_w4a16_weight_at: this build has no sm_90a kernels");
#else
  if (n < 0 || n >= w.num_out_features || k < 0 || k >= w.num_in_features) {
    return invalid_argument("cutlass_w4a16_weight_at: (" + std::to_string(n) + ", " + std::to_string(k) +
                            ") is outside the weight");
  }
  const int64_t offset = cutlass_w4a16::reordered_offset(n, k, 0, w.num_out_features, w.num_in_features, 1);
  const int q = (w.weight[offset / 2] >> (4 * (offset % 2))) & 0xF;
  return q >= 8 ? q - 16 : q;
#endif
}

}  // namespace crosspoint::cuda
