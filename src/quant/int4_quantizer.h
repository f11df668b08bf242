// Int4 weight quantisation into the GPTQ format: round-to-nearest (RTN) and GPTQ (Frantar et
// al. 2022, as AutoGPTQ implements it). Weights are handled transposed, w_t [K, N] (one row
// per input feature), which is both the GPTQ checkpoint orientation and the order GPTQ
// walks the columns of W [N, K].
//
// Group parameters (AutoGPTQ's Quantizer, 4 bits, maxq = 15), per group and output column:
//   sym:  scale = 2 * max|w| / 15, zero = 8
//   asym: lo = min(min w, 0), hi = max(max w, 0), scale = (hi - lo) / 15, zero = round(-lo / scale)
//   q = clamp(round(w / scale) + zero, 0, 15), w ~= scale * (q - zero)
// The scale is rounded to fp16 before q is computed, so the stored checkpoint reproduces the
// weights exactly as quantised.
#pragma once

#include <cstdint>
#include <vector>

#include "common/status.h"
#include "formats/safetensors.h"

namespace crosspoint {

struct Int4QuantOptions {
  int64_t group_size = 128;  // -1: one group over all input features
  bool sym = true;
  bool act_order = false;      // GPTQ only: quantise columns by decreasing Hessian diagonal
  double damp_percent = 0.01;  // GPTQ: added to the diagonal, times its mean
  // GPTQ: group parameters from the original weights of each contiguous group, fixed before
  // the error compensation starts (AutoGPTQ's static_groups; what llm-compressor always
  // does). Off: from the error-updated weights at each group start, in quantisation order
  // (AutoGPTQ's default). With act_order, static groups keep g_idx contiguous.
  bool static_groups = false;
  int64_t block_size = 128;  // GPTQ: columns per lazy batch update
};

// A quantised linear in checkpoint row order.
struct Int4Quantized {
  int64_t in_features = 0;       // K
  int64_t out_features = 0;      // N
  int64_t group_size = 0;        // resolved (K when the option was -1)
  std::vector<uint8_t> q;        // [K, N] codes 0..15
  std::vector<uint16_t> scales;  // [K / group_size, N] fp16
  std::vector<uint8_t> zeros;    // [K / group_size, N] 0..15
  std::vector<int32_t> g_idx;    // [K] group of each input row
  double loss = 0.0;             // GPTQ's sum of (w - q)^2 / Hinv_ii^2 / 2 (RTN: plain squared error)

  // W[k, n] = scale * (q - zero) as f32, [K, N].
  std::vector<float> dequantize() const;
};

// The inverse-Hessian factor GPTQ needs, computed once per distinct layer input (q/k/v share
// one, gate/up share one).
struct GptqHessianFactor {
  int64_t num_features = 0;        // K
  std::vector<int32_t> perm;       // [K] quantisation order (identity without act-order)
  std::vector<uint8_t> dead;       // [K] 1 where the input feature never fired (H_kk == 0)
  std::vector<double> hinv_upper;  // [K, K] upper Cholesky factor U of (H + damp I)^-1 in perm order
};

// The shapes int4 quantisation takes: K and N positive multiples of 8, the group dividing K.
Status check_int4_shapes(int64_t in_features, int64_t out_features, int64_t group_size);

// Lower Cholesky factor of the symmetric positive-definite a [n, n] (row-major), in place; false
// when it is not positive definite. GPTQ's factor on the host, and the diagonal blocks of the
// GPU's blocked one (quant/cuda/gpu_gptq.h).
bool cholesky_lower(std::vector<double>& a, int64_t n);

// hessian: [K, K] sum over calibration tokens of x x^T (any positive scale). Fails when the
// damped Hessian is not positive definite.
Result<GptqHessianFactor> gptq_factor_hessian(const std::vector<double>& hessian, int64_t num_features,
                                              const Int4QuantOptions& options);

// w_t: [K, N] f32. Fails when the group size does not divide K or K, N are not multiples of 8.
Result<Int4Quantized> rtn_quantize_int4(const float* w_t, int64_t in_features, int64_t out_features,
                                        const Int4QuantOptions& options);
Result<Int4Quantized> gptq_quantize_int4(const float* w_t, int64_t in_features, int64_t out_features,
                                         const GptqHessianFactor& factor, const Int4QuantOptions& options);

// The checkpoint tensors prefix.qweight / .qzeros (v1: zero - 1) / .scales / .g_idx.
std::vector<TensorToWrite> pack_gptq_tensors(const Int4Quantized& quantized, const std::string& prefix);

}  // namespace crosspoint
