// Scalar reads of weights kept in their stored dtype (f32, f16, bf16), shared by the
// reference kernels and the scalar tails of the fast ones.
#pragma once

#include <cstdint>

#include "common/dtype.h"
#include "common/status.h"

namespace crosspoint {

// Element i of a weight array of dtype f32, f16 or bf16, as f32.
inline float load_weight(const void* data, DType dtype, int64_t i) {
  switch (dtype) {
    case DType::kF16: return f16_to_f32(static_cast<const uint16_t*>(data)[i]);
    case DType::kBF16: return bf16_to_f32(static_cast<const uint16_t*>(data)[i]);
    default: return static_cast<const float*>(data)[i];
  }
}

inline bool is_float_weight_dtype(DType dtype) {
  return dtype == DType::kF32 || dtype == DType::kF16 || dtype == DType::kBF16;
}

// ok, or an unsupported Status naming the op.
inline Status check_weight_dtype(const char* op, DType dtype) {
  if (is_float_weight_dtype(dtype)) return Status::ok();
  return unsupported(std::string(op) + ": weight dtype " + std::string(dtype_name(dtype)) +
                     " is not one of f32, f16, bf16");
}

}  // namespace crosspoint
