// W4A16 linear layers of AutoAWQ checkpoints in its GEMM layout (quant_method "awq", version
// "gemm", e.g. Qwen/Qwen2.5-7B-Instruct-AWQ):
//   prefix.qweight  I32 [K, N/8]       eight 4-bit columns per word along N, column 8c + j
//                                      in nibble kAwqNibbleOfColumn[j] (AutoAWQ's interleave)
//   prefix.qzeros   I32 [groups, N/8]  zero points 0..15, the same interleave
//   prefix.scales   float [groups, N]
// w[k, n] = scales[k / G, n] * (q[k, n] - zero[k / G, n]). Repacked at load into the GPTQ
// layout (GptqLinearWeight): rows packed along K, real zero points, which the CPU and the CUDA
// W4A16 kernels (w4a16_gemm.h) both take.
#pragma once

#include <memory>

#include "model/linear_weight_format.h"

namespace crosspoint {

// Matches quant_method "awq".
std::shared_ptr<const LinearWeightFormat> awq_linear_weight_format();

}  // namespace crosspoint
