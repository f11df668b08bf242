// Per-channel FP8 / INT8 weight quantisation of checkpoint tensors on the GPU
// (kernels/cuda/weight_quant.h), for quantize_model with device "cuda": the tensor's bytes go
// up as the checkpoint stores them (f32, f16 or bf16), the codes and scales come back. The same
// bytes as the CPU quantisers (quant/fp8_quantizer.h, quant/int8_quantizer.h). One device
// buffer set, grown to the largest tensor and reused; built only with the CUDA backend.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "common/status.h"
#include "formats/safetensors.h"
#include "kernels/cuda/weight_quant.h"

namespace crosspoint {

struct GpuQuantizedWeight {
  std::vector<uint8_t> weight;  // [N, K] e4m3 or int8 bytes
  std::vector<float> scale;     // [N] f32
};

class GpuWeightQuantizer {
 public:
  // Fails (unsupported) without a visible GPU.
  static Result<std::unique_ptr<GpuWeightQuantizer>> create();
  ~GpuWeightQuantizer();
  GpuWeightQuantizer(const GpuWeightQuantizer&) = delete;
  GpuWeightQuantizer& operator=(const GpuWeightQuantizer&) = delete;

  // w: a 2-D f32, f16 or bf16 checkpoint tensor [N, K].
  Result<GpuQuantizedWeight> quantize(const TensorInfo& w, cuda::WeightQuantScheme scheme);

  // The most device memory held at once so far (bytes).
  size_t peak_device_bytes() const { return capacity_in_ + capacity_out_ + capacity_scale_; }

 private:
  GpuWeightQuantizer() = default;
  Status reserve(void** buffer, size_t* capacity, size_t bytes);
  void* in_ = nullptr;
  void* out_ = nullptr;
  void* scale_ = nullptr;
  size_t capacity_in_ = 0, capacity_out_ = 0, capacity_scale_ = 0;
};

}  // namespace crosspoint
