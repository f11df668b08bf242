// W4A16 linear layers of compressed-tensors' "pack-quantized" checkpoints (what llm-compressor
// writes for its W4A16 schemes, e.g. the `*-quantized.w4a16` hub models):
//   prefix.weight_packed      I32 [N, K/8]       eight signed 4-bit values per word along K,
//                                                low nibble first, each stored as value + 8
//   prefix.weight_scale       float [N, groups]  (channel strategy: [N, 1])
//   prefix.weight_zero_point  I32 [N/8, groups]  asymmetric only: zero points + 8, packed along N
//   prefix.weight_shape       int [2]            [N, K]
//   prefix.weight_g_idx       I32 [K]            optional (actorder "group")
// Repacked at load into the GPTQ layout (GptqLinearWeight), so every kernel that runs GPTQ
// runs these: w = scale * (stored - stored_zero), with stored_zero 8 when symmetric.
#pragma once

#include <memory>

#include "model/linear_weight_format.h"

namespace crosspoint {

// Matches quant_method "compressed-tensors" with format "pack-quantized".
std::shared_ptr<const LinearWeightFormat> packed_int4_linear_weight_format();

}  // namespace crosspoint
