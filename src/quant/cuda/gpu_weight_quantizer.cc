#include "quant/cuda/gpu_weight_quantizer.h"

#include <cuda_runtime.h>

#include <string>

#include "kernels/cuda/cuda_status.h"

namespace crosspoint {

Result<std::unique_ptr<GpuWeightQuantizer>> GpuWeightQuantizer::create() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    (void)cudaGetLastError();
    return unsupported("quantize --device cuda: no CUDA GPU is visible");
  }
  return std::unique_ptr<GpuWeightQuantizer>(new GpuWeightQuantizer());
}

GpuWeightQuantizer::~GpuWeightQuantizer() {
  for (void* p : {in_, out_, scale_})
    if (p != nullptr) cudaFree(p);
}

Status GpuWeightQuantizer::reserve(void** buffer, size_t* capacity, size_t bytes) {
  if (bytes <= *capacity) return Status::ok();
  if (*buffer != nullptr) cudaFree(*buffer);
  *buffer = nullptr;
  *capacity = 0;
  CROSSPOINT_CUDA_RETURN_IF_ERROR(cudaMalloc(buffer, bytes), "cudaMalloc");
  *capacity = bytes;
  return Status::ok();
}

Result<GpuQuantizedWeight> GpuWeightQuantizer::quantize(const TensorInfo& w, cuda::WeightQuantScheme scheme) {
  if (w.shape.size() != 2 || (w.dtype != DType::kF32 && w.dtype != DType::kF16 && w.dtype != DType::kBF16))
    return corrupt(w.file + ": tensor " + w.name + " is not a 2-D f32, f16 or bf16 weight");
  const int64_t N = w.shape[0], K = w.shape[1];
  const size_t codes = static_cast<size_t>(N) * static_cast<size_t>(K);
  GpuQuantizedWeight q;
  const Status status = [&]() -> Status {
    CROSSPOINT_RETURN_IF_ERROR(reserve(&in_, &capacity_in_, w.num_bytes));
    CROSSPOINT_RETURN_IF_ERROR(reserve(&out_, &capacity_out_, codes));
    CROSSPOINT_RETURN_IF_ERROR(reserve(&scale_, &capacity_scale_, static_cast<size_t>(N) * sizeof(float)));
    CROSSPOINT_CUDA_RETURN_IF_ERROR(cudaMemcpy(in_, w.data, w.num_bytes, cudaMemcpyHostToDevice), "upload");
    CROSSPOINT_RETURN_IF_ERROR(cuda::quantize_weight_per_channel(
        in_, w.dtype, N, K, scheme, static_cast<uint8_t*>(out_), static_cast<float*>(scale_), nullptr));
    q.weight.resize(codes);
    q.scale.resize(static_cast<size_t>(N));
    CROSSPOINT_CUDA_RETURN_IF_ERROR(cudaMemcpy(q.weight.data(), out_, codes, cudaMemcpyDeviceToHost), "download");
    CROSSPOINT_CUDA_RETURN_IF_ERROR(
        cudaMemcpy(q.scale.data(), scale_, q.scale.size() * sizeof(float), cudaMemcpyDeviceToHost), "download");
    return Status::ok();
  }();
  if (!status.is_ok()) return Status(status.code(), "quantize " + w.name + " on the GPU: " + status.message());
  return q;
}

}  // namespace crosspoint
