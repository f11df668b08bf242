// FP8 weight quantisation as compressed-tensors' FP8_DYNAMIC preset does it: one scale per
// output channel, scale[n] = max_k |W[n, k]| / 448 (floored at fp32 epsilon),
// wq[n, k] = e4m3(clamp(W[n, k] / scale[n], -448, 448)).
#pragma once

#include <cstdint>
#include <vector>

namespace crosspoint {

struct Fp8Quantized {
  std::vector<uint8_t> weight;  // [N, K] e4m3
  std::vector<float> scale;     // [N] f32
};

// w: [N, K] f32 (HF orientation).
Fp8Quantized quantize_fp8_per_channel(const float* w, int64_t out_features, int64_t in_features);

}  // namespace crosspoint
