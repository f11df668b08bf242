// Programmatic dependent launch (Hopper, sm_90+): a kernel launched with launch_programmatic()
// may start while the kernel before it on the stream is still finishing, so its launch latency
// and its first weight loads overlap that kernel's tail. Decode at small batch is a chain of
// ~10 short kernels per layer, where those gaps are a large share of the step.
//
// The contract for every kernel launched this way: before calling wait_for_prior_kernels() it
// may read only memory that no kernel of the step writes (weights; the step's lengths and
// block tables, uploaded before its first kernel; K/V rows of earlier steps); everything else —
// reading activations, writing any output — comes after it. wait_for_prior_kernels() returns
// once the previous kernel has completed and its writes are visible (a no-op when the launch
// was not programmatic, and on GPUs before sm_90). allow_dependent_launch() lets the next
// programmatic kernel be scheduled; calling it after the wait keeps at most two kernels of the
// chain resident at once. rope_kv_write calls it before its wait, for the attention's early
// K/V copies; the next kernel starts only once every CTA of this one is running, so CTAs that
// wait beside a kernel never hold back any of its own. The other kernels call it after their
// wait: doing so before it, for the linears' weight prefetch, slowed the decode step
// (docs/log/cuda.md).
#pragma once

#include <cuda_runtime.h>

#include <utility>

namespace crosspoint::cuda {

// On where the current device supports it (compute capability >= 9.0) unless the environment
// sets CROSSPOINT_PDL=0; benchmarks switch it to compare. Read at launch time, so a CUDA graph
// keeps what was in force when it was captured.
bool programmatic_launch_enabled();
void set_programmatic_launch_enabled(bool enabled);

template <typename... KernelArgs, typename... Args>
cudaError_t launch_programmatic(void (*kernel)(KernelArgs...), dim3 grid, dim3 block, size_t shared_bytes,
                                cudaStream_t stream, Args&&... args) {
  cudaLaunchAttribute attribute[1];
  attribute[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute[0].val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = shared_bytes;
  config.stream = stream;
  config.attrs = attribute;
  config.numAttrs = programmatic_launch_enabled() ? 1 : 0;
  return cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...);
}

// launch_programmatic in thread-block clusters of cluster_size blocks along x (sm_90+; grid.x a
// multiple of cluster_size).
template <typename... KernelArgs, typename... Args>
cudaError_t launch_programmatic_clusters(void (*kernel)(KernelArgs...), dim3 grid, dim3 block, int cluster_size,
                                         size_t shared_bytes, cudaStream_t stream, Args&&... args) {
  cudaLaunchAttribute attribute[2];
  attribute[0].id = cudaLaunchAttributeClusterDimension;
  attribute[0].val.clusterDim.x = static_cast<unsigned>(cluster_size);
  attribute[0].val.clusterDim.y = 1;
  attribute[0].val.clusterDim.z = 1;
  attribute[1].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute[1].val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = shared_bytes;
  config.stream = stream;
  config.attrs = attribute;
  config.numAttrs = programmatic_launch_enabled() ? 2 : 1;
  return cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...);
}

__device__ __forceinline__ void wait_for_prior_kernels() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}

__device__ __forceinline__ void allow_dependent_launch() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

}  // namespace crosspoint::cuda
