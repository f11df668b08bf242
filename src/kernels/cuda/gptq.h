// GPTQ's device steps, run by quant/cuda/gpu_gptq.h: the calibration Hessian's f64 sum, the
// permuted and damped matrix whose Cholesky factor gives GPTQ's inverse-Hessian factor, and
// the column loop that quantises W [K, N] (one row per input feature, in quantisation order)
// in blocks of columns with error feedback. The arithmetic is the host's
// (quant/int4_quantizer.cc: gptq_quantize_int4, rtn_quantize_int4) operation for operation,
// fused multiply-adds where the host's compiler fuses them, and each weight is updated in the
// same order, so with the same factor the codes, scales and zero points are the same bits.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "common/status.h"

namespace crosspoint::cuda {

// h[i] += partial[i] for i < count: one batch's f32 X^T X into the f64 Hessian.
Status gptq_add_to_hessian(const float* partial, double* h, int64_t count, cudaStream_t stream);

// out[(K-1-i) K + (K-1-j)] = h[perm[i] K + perm[j]], plus damp where i == j; a zero diagonal
// (an input feature that never fired) reads 1. The matrix whose lower Cholesky factor M gives
// U = J M^-1 J, GPTQ's upper factor of H^-1 (int4_quantizer.cc says why).
Status gptq_reversed_permuted_hessian(const double* h, const int32_t* perm, double damp, int64_t K, double* out,
                                      cudaStream_t stream);

// a = the K x K identity (f64).
Status gptq_set_identity(double* a, int64_t K, cudaStream_t stream);

// u[i K + j] = m_inv[(K-1-i) K + (K-1-j)] as f32 for j >= i, else 0 (m_inv row-major lower,
// M^-1); u_diag[i] the same diagonal in f64.
Status gptq_upper_factor(const double* m_inv, int64_t K, float* u, double* u_diag, cudaStream_t stream);

// w_t[k N + n] = w_nk[n K + k] (fp16 [N, K] to f32 [K, N]).
Status gptq_transpose_weight(const uint16_t* w_nk, int64_t N, int64_t K, float* w_t, cudaStream_t stream);

// dst[i N + n] = src[perm[i] N + n], or 0 where dead[perm[i]] (dead may be null).
Status gptq_gather_rows(const float* src, const int32_t* perm, const uint8_t* dead, int64_t K, int64_t N, float* dst,
                        cudaStream_t stream);

// Group parameters (find_group_params) of rows [row_begin, row_end) of w_t [K, N]: scale (an
// fp16 value as f32) and zero point per output column.
Status gptq_group_params(const float* w_t, int64_t N, int64_t row_begin, int64_t row_end, bool sym, float* scale,
                         uint8_t* zero, cudaStream_t stream);

struct GptqColumnArgs {
  float* w = nullptr;              // [K, N] f32 in quantisation order, updated in place
  const float* u = nullptr;        // [K, K] f32 upper factor (quantisation order); null for RTN
  const double* u_diag = nullptr;  // [K]; null for RTN
  const int32_t* perm = nullptr;   // [K] checkpoint row of each quantisation step
  int64_t K = 0, N = 0;
  int64_t group_size = 0;  // G, dividing K
  bool sym = true;
  bool static_groups = false;     // group_scale / group_zero already hold every group (by checkpoint row)
  bool error_feedback = true;     // false: RTN (no updates; loss = plain squared error)
  float* group_scale = nullptr;   // [K / G, N]: written at each group start unless static_groups
  uint8_t* group_zero = nullptr;  // [K / G, N]
  uint8_t* q = nullptr;           // [K, N] codes in checkpoint row order
  int32_t* g_idx = nullptr;       // [K] group of each checkpoint row
  float* err = nullptr;           // [kGptqMaxBlock, N] scaled errors of the current block
  double* loss = nullptr;         // [N] per output column, accumulated
};

inline constexpr int kGptqMaxBlock = 128;  // columns per lazy batch update, at most

// Quantises steps [b0, b1) (b1 - b0 <= kGptqMaxBlock) with the in-block error updates.
Status gptq_quantize_block(const GptqColumnArgs& a, int64_t b0, int64_t b1, cudaStream_t stream);

// The lazy batch update: w[j] -= sum over i in [b0, b1) of u[i, j] err[i] for every j >= b1,
// i ascending, as the host does.
Status gptq_update_later_rows(const GptqColumnArgs& a, int64_t b0, int64_t b1, cudaStream_t stream);

// w_nk[n K + k] = fp16(scale[g_idx[k], n] * (q[k N + n] - zero[g_idx[k], n])): the quantised
// weights back in the fp16 [N, K] layout a dense linear reads.
Status gptq_dequantize_fp16(const uint8_t* q, const int32_t* g_idx, const float* group_scale, const uint8_t* group_zero,
                            int64_t K, int64_t N, uint16_t* w_nk, cudaStream_t stream);

}  // namespace crosspoint::cuda
