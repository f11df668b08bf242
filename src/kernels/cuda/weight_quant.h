// Per-output-channel weight quantisation on the GPU, for `crosspoint quantize --device cuda`:
// byte for byte what the CPU quantisers write (quant/fp8_quantizer.h, quant/int8_quantizer.h),
// from the checkpoint's f32, f16 or bf16 weight [N, K]:
//   fp8   scale[n] = max(amax_k |W[n, k]| / 448, FLT_EPSILON),  q = e4m3(W / scale)  (RNE, saturated)
//   int8  scale[n] = max(amax_k |W[n, k]|, FLT_EPSILON) / 127.5, q = clamp(rint(W / scale), -128, 127)
// Divisions are IEEE fp32, as on the host.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "common/dtype.h"
#include "common/status.h"

namespace crosspoint::cuda {

enum class WeightQuantScheme { kFp8E4M3, kInt8 };

//   w      [N, K] in dtype (kF32, kF16 or kBF16), dense, on the device
//   q      [N, K] e4m3 or int8 bytes, dense
//   scale  [N] f32
Status quantize_weight_per_channel(const void* w, DType dtype, int64_t n, int64_t k, WeightQuantScheme scheme,
                                   uint8_t* q, float* scale, cudaStream_t stream);

}  // namespace crosspoint::cuda
