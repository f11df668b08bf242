// Fast linear: output features are split over the thread pool in tiles of kTileN rows of W;
// inside a tile, x is walked 4 rows at a time and each 8-wide slice of two weight rows is
// converted to f32 once and used for all 4 rows (8 accumulators). The tile of W (kTileN x K
// in its stored dtype) stays in L1/L2 while every row group of x streams past it.
#include <algorithm>

#include "common/thread_pool.h"
#include "kernels/cpu/simd.h"
#include "kernels/linear.h"
#include "kernels/weight_dtype.h"

namespace crosspoint {
namespace {

constexpr int64_t kTileN = 16;  // weight rows per work item

template <DType D>
CROSSPOINT_AVX2_TARGET inline __m256 load_w8(const void* w, int64_t i) {
  if constexpr (D == DType::kF16) return simd::load8_f16(static_cast<const uint16_t*>(w) + i);
  else if constexpr (D == DType::kBF16) return simd::load8_bf16(static_cast<const uint16_t*>(w) + i);
  else return simd::load8_f32(static_cast<const float*>(w) + i);
}

// y[m, n0..n0+NR) for MR rows of x (MR <= 4) and NR weight rows (NR <= 2).
template <DType D, int MR, int NR>
CROSSPOINT_AVX2_TARGET void micro_kernel(const LinearArgs& a, int64_t stride, int64_t m0, int64_t n0) {
  const int64_t K = a.in_features;
  __m256 acc[MR][NR];
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; ++j) acc[i][j] = _mm256_setzero_ps();
  const float* xrow[MR];
  for (int i = 0; i < MR; ++i) xrow[i] = a.x + (m0 + i) * stride;
  int64_t k = 0;
  for (; k + 8 <= K; k += 8) {
    __m256 w[NR];
    for (int j = 0; j < NR; ++j) w[j] = load_w8<D>(a.weight, (n0 + j) * K + k);
    for (int i = 0; i < MR; ++i) {
      const __m256 xv = _mm256_loadu_ps(xrow[i] + k);
      for (int j = 0; j < NR; ++j) acc[i][j] = _mm256_fmadd_ps(xv, w[j], acc[i][j]);
    }
  }
  for (int i = 0; i < MR; ++i) {
    for (int j = 0; j < NR; ++j) {
      float sum = simd::horizontal_sum(acc[i][j]);
      for (int64_t kk = k; kk < K; ++kk) sum += xrow[i][kk] * load_weight(a.weight, D, (n0 + j) * K + kk);
      if (a.bias) sum += a.bias[n0 + j];
      a.y[(m0 + i) * a.out_features + n0 + j] = sum;
    }
  }
}

template <DType D, int MR>
CROSSPOINT_AVX2_TARGET void row_group(const LinearArgs& a, int64_t stride, int64_t m0, int64_t n_begin, int64_t n_end) {
  int64_t n = n_begin;
  for (; n + 2 <= n_end; n += 2) micro_kernel<D, MR, 2>(a, stride, m0, n);
  if (n < n_end) micro_kernel<D, MR, 1>(a, stride, m0, n);
}

template <DType D>
CROSSPOINT_AVX2_TARGET void tile_avx2(const LinearArgs& a, int64_t stride, int64_t n_begin, int64_t n_end) {
  int64_t m = 0;
  for (; m + 4 <= a.num_rows; m += 4) row_group<D, 4>(a, stride, m, n_begin, n_end);
  switch (a.num_rows - m) {
    case 3: row_group<D, 3>(a, stride, m, n_begin, n_end); break;
    case 2: row_group<D, 2>(a, stride, m, n_begin, n_end); break;
    case 1: row_group<D, 1>(a, stride, m, n_begin, n_end); break;
    default: break;
  }
}

// Portable fallback for CPUs without AVX2: same tiling, scalar math.
void tile_scalar(const LinearArgs& a, int64_t stride, int64_t n_begin, int64_t n_end) {
  for (int64_t m = 0; m < a.num_rows; ++m) {
    for (int64_t n = n_begin; n < n_end; ++n) {
      float sum = 0.0f;
      for (int64_t k = 0; k < a.in_features; ++k)
        sum += a.x[m * stride + k] * load_weight(a.weight, a.weight_dtype, n * a.in_features + k);
      a.y[m * a.out_features + n] = sum + (a.bias ? a.bias[n] : 0.0f);
    }
  }
}

}  // namespace

Status linear(const LinearArgs& a) {
  CROSSPOINT_RETURN_IF_ERROR(validate_linear_args(a));
  if (a.num_rows == 0) return Status::ok();
  const int64_t stride = a.x_row_stride ? a.x_row_stride : a.in_features;
  const int64_t num_tiles = (a.out_features + kTileN - 1) / kTileN;
  const bool vector = simd::cpu_has_avx2();
  global_thread_pool().parallel_for(static_cast<size_t>(num_tiles), [&](size_t t_begin, size_t t_end) {
    const int64_t n_begin = static_cast<int64_t>(t_begin) * kTileN;
    const int64_t n_end = std::min(a.out_features, static_cast<int64_t>(t_end) * kTileN);
    if (!vector) return tile_scalar(a, stride, n_begin, n_end);
    // Large prefills: walk the range one tile at a time so the tile stays cache-resident.
    for (int64_t n0 = n_begin; n0 < n_end; n0 += kTileN) {
      const int64_t n1 = std::min(n_end, n0 + kTileN);
      switch (a.weight_dtype) {
        case DType::kF16: tile_avx2<DType::kF16>(a, stride, n0, n1); break;
        case DType::kBF16: tile_avx2<DType::kBF16>(a, stride, n0, n1); break;
        default: tile_avx2<DType::kF32>(a, stride, n0, n1); break;
      }
    }
  });
  return Status::ok();
}

}  // namespace crosspoint
