// W8A8-INT8 linear, as compressed-tensors "int-quantized" checkpoints (llm-compressor's W8A8
// presets, SmoothQuant-style models) run in vLLM: int8 weights with one fp32 scale per output
// channel (or per tensor), activations quantised to int8 per token at run time from their fp16
// value (the GPU's dtype flow, kernels/fp8.h), as vLLM's dynamic_scaled_int8_quant does:
//   h[t, k]    = fp16(clamp(x[t, k], -65504, 65504))
//   amax[t]    = max_k |h[t, k]|
//   s_x[t]     = amax[t] / 127                                   fp32
//   xq[t, k]   = clamp(rint(h[t, k] * (127 / amax[t])), -128, 127)   (0 where amax is 0)
//   y[t, n]    = (float(sum_k xq[t, k] * wq[n, k]) * s_x[t]) * s_w[n]  (+ bias[n])
// The sum is exact in int32. A static per-tensor activation scale (input_scale > 0) replaces
// s_x[t] and quantises as vLLM's static_scaled_int8_quant: clamp(rint(h / input_scale)).
#pragma once

#include <cstdint>

#include "common/status.h"

namespace crosspoint {

struct Int8LinearArgs {
  const float* x = nullptr;             // [num_rows, in_features] f32, rows x_row_stride apart
  int64_t x_row_stride = 0;             // elements; 0 means in_features
  const int8_t* weight = nullptr;       // [out_features, in_features] (HF orientation)
  const float* weight_scale = nullptr;  // [out_features] f32
  const float* bias = nullptr;          // [out_features] f32, or null
  float* y = nullptr;                   // [num_rows, out_features] f32
  int64_t num_rows = 0;
  int64_t in_features = 0;
  int64_t out_features = 0;
  float input_scale = 0.0f;  // > 0: static per-tensor activation scale; 0: per token
};

// The activation quantisation above: xq [num_rows, in_features], x_scale [num_rows].
Status int8_quantize_activations_ref(const Int8LinearArgs& args, int8_t* xq, float* x_scale);

// Plain reference (int64 sums) and the threaded version (int32 sums, outputs split over the
// global pool); both give the same bits, the sums being exact.
Status int8_linear_ref(const Int8LinearArgs& args);
Status int8_linear(const Int8LinearArgs& args);

// Round-to-nearest-even int8 of one value, clamped to [-128, 127] (vLLM's float_to_int8_rn).
int8_t f32_to_int8_rn(float v);

Status validate_int8_linear_args(const Int8LinearArgs& args);

}  // namespace crosspoint
