// RMSNorm as Hugging Face's LlamaRMSNorm/Qwen2RMSNorm computes it in fp32:
// y = x * rsqrt(mean(x^2) + eps) * weight.
#pragma once

#include <cstdint>

#include "common/dtype.h"
#include "common/status.h"

namespace crosspoint {

struct RmsNormArgs {
  const float* x = nullptr;      // [num_rows, dim] f32
  const void* weight = nullptr;  // [dim] in weight_dtype (f32/f16/bf16)
  DType weight_dtype = DType::kF32;
  float* y = nullptr;  // [num_rows, dim] f32; may equal x
  int64_t num_rows = 0;
  int64_t dim = 0;
  float eps = 1e-6f;
};

Status rms_norm(const RmsNormArgs& args);
Status rms_norm_ref(const RmsNormArgs& args);

}  // namespace crosspoint
