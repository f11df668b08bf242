// INT8 weight quantisation as compressed-tensors does it for llm-compressor's W8A8 preset
// (symmetric, one scale per output channel, min/max observer):
//   scale[n] = max(max_k |W[n, k]|, fp32 epsilon) / 127.5     (the int8 range 255 over 2)
//   wq[n, k] = clamp(rint(W[n, k] / scale[n]), -128, 127)
#pragma once

#include <cstdint>
#include <vector>

namespace crosspoint {

struct Int8Quantized {
  std::vector<int8_t> weight;  // [N, K]
  std::vector<float> scale;    // [N] f32
};

// w: [N, K] f32 (HF orientation).
Int8Quantized quantize_int8_per_channel(const float* w, int64_t out_features, int64_t in_features);

}  // namespace crosspoint
