// Dense linear layer y = x · Wᵀ (+ bias) with the weight in its stored dtype and fp32
// accumulation: the matmul behind every projection and the lm_head.
#pragma once

#include <cstdint>

#include "common/dtype.h"
#include "common/status.h"

namespace crosspoint {

struct LinearArgs {
  const float* x = nullptr;      // [num_rows, in_features] f32, rows x_row_stride apart
  int64_t x_row_stride = 0;      // elements; 0 means in_features
  const void* weight = nullptr;  // [out_features, in_features] in weight_dtype (f32/f16/bf16)
  DType weight_dtype = DType::kF32;
  const float* bias = nullptr;  // [out_features] f32, or null
  float* y = nullptr;           // [num_rows, out_features] f32
  int64_t num_rows = 0;
  int64_t in_features = 0;
  int64_t out_features = 0;
};

// Fast version: AVX2/FMA/F16C where the CPU has them, multithreaded over output features
// with the global thread pool; decode (a few rows) is a GEMV streaming each weight once,
// prefill reuses each loaded weight for 4 rows of x at a time.
Status linear(const LinearArgs& args);

// Plain reference: one scalar dot product per output, double accumulation.
Status linear_ref(const LinearArgs& args);

// Shared argument checks: null pointers, non-positive sizes, weight dtype.
Status validate_linear_args(const LinearArgs& args);

}  // namespace crosspoint
