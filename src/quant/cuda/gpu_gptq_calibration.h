// GPTQ of every transformer linear on the GPU (`quantize --scheme w4a16 --device cuda`), in
// the host calibration session's order (quant/gptq_calibration.h): layer by layer, and in each
// layer q|k|v, o, gate|up, down, every linear seeing the outputs of the already-quantised ones
// before it. The calibration samples run through the CUDA model in batches of up to
// kGpuGptqBatchTokens tokens, a layer at a time, the residual stream of every batch kept on the
// GPU between layers; a linear's Hessian sums its input over every batch before it is quantised
// (quant/cuda/gpu_gptq.h) and its weights on the GPU replaced by their dequantised values.
// Fused linears are quantised as one (the rows of W are independent given H) and split back
// into the checkpoint's q/k/v and gate/up. Built only with the CUDA backend.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/status.h"
#include "model/model.h"
#include "quant/int4_quantizer.h"

namespace crosspoint {

inline constexpr int32_t kGpuGptqBatchTokens = 16384;

struct GpuGptqReport {
  int64_t num_tokens = 0;        // calibration tokens
  int64_t num_batches = 0;       // batches they ran in
  double upload_s = 0;           // the model onto the GPU
  double calibrate_s = 0;        // the layer passes, Hessians and quantisation
  size_t peak_device_bytes = 0;  // the most the device held at once (cudaMemGetInfo, sampled)
  size_t residual_stream_bytes = 0;
  size_t gptq_buffer_bytes = 0;  // the quantiser's own buffers, at most
};

// model: the dense checkpoint as loaded (fp16 on the GPU). Quantised layers by tensor prefix
// ("model.layers.0.self_attn.q_proj"), as GptqCalibrationSession::results().
Result<std::map<std::string, Int4Quantized>> gptq_quantize_on_gpu(const Model& model,
                                                                  const std::vector<std::vector<int32_t>>& calibration,
                                                                  const Int4QuantOptions& options,
                                                                  GpuGptqReport* report = nullptr);

}  // namespace crosspoint
