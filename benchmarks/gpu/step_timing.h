// What the model-step benchmarks (bench_decode_step, bench_tensor_parallel) time with: steps
// between two events on their stream, eagerly or replayed from a CUDA graph, as median and
// percentiles.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "kernels/cuda/cuda_status.h"

namespace crosspoint::bench {

struct TimingStats {
  double median_ms = 0, p10_ms = 0, p90_ms = 0, min_ms = 0;
  int32_t reps = 0;
};

inline TimingStats stats_of(std::vector<double> ms) {
  std::sort(ms.begin(), ms.end());
  auto at = [&](double q) { return ms[static_cast<size_t>(q * static_cast<double>(ms.size() - 1) + 0.5)]; };
  return {at(0.5), at(0.1), at(0.9), ms.front(), static_cast<int32_t>(ms.size())};
}

inline nlohmann::json to_json(const TimingStats& t) {
  return {
      {"median_ms", t.median_ms}, {"p10_ms", t.p10_ms}, {"p90_ms", t.p90_ms}, {"min_ms", t.min_ms}, {"reps", t.reps}};
}

// Times `launch` (which enqueues on `stream`) `reps` times between two events.
inline Result<TimingStats> time_launches(const std::function<Status()>& launch, cudaStream_t stream, int32_t reps) {
  cudaEvent_t start = nullptr, stop = nullptr;
  CROSSPOINT_CUDA_RETURN_IF_ERROR(cudaEventCreate(&start), "cudaEventCreate");
  CROSSPOINT_CUDA_RETURN_IF_ERROR(cudaEventCreate(&stop), "cudaEventCreate");
  std::vector<double> times;
  Status status;
  for (int32_t i = 0; i < reps && status.is_ok(); ++i) {
    status = cuda::cuda_status(cudaEventRecord(start, stream), "cudaEventRecord");
    if (status.is_ok()) status = launch();
    if (status.is_ok()) status = cuda::cuda_status(cudaEventRecord(stop, stream), "cudaEventRecord");
    if (status.is_ok()) status = cuda::cuda_status(cudaEventSynchronize(stop), "cudaEventSynchronize");
    float ms = 0;
    if (status.is_ok()) status = cuda::cuda_status(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    times.push_back(ms);
  }
  (void)cudaEventDestroy(start);
  (void)cudaEventDestroy(stop);
  CROSSPOINT_RETURN_IF_ERROR(status);
  return stats_of(times);
}

// Captures `enqueue` into a graph (after one eager run) and times its replays; `while_held`
// runs while the graph exists (to see the device memory it takes).
inline Result<TimingStats> time_graph_replays(const std::function<Status()>& enqueue, cudaStream_t stream, int32_t reps,
                                              const std::function<void()>& while_held) {
  CROSSPOINT_RETURN_IF_ERROR(enqueue());
  CROSSPOINT_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream), "warm-up step");
  CROSSPOINT_CUDA_RETURN_IF_ERROR(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "begin capture");
  const Status launched = enqueue();
  cudaGraph_t graph = nullptr;
  const cudaError_t end = cudaStreamEndCapture(stream, &graph);
  if (!launched.is_ok() || end != cudaSuccess) {
    if (graph != nullptr) (void)cudaGraphDestroy(graph);
    (void)cudaGetLastError();
    return launched.is_ok() ? cuda::cuda_status(end, "cudaStreamEndCapture") : launched;
  }
  cudaGraphExec_t exec = nullptr;
  const cudaError_t inst = cudaGraphInstantiate(&exec, graph, 0);
  (void)cudaGraphDestroy(graph);
  CROSSPOINT_CUDA_RETURN_IF_ERROR(inst, "cudaGraphInstantiate");
  auto replay = [&] { return cuda::cuda_status(cudaGraphLaunch(exec, stream), "cudaGraphLaunch"); };
  Status warm;
  for (int i = 0; i < 3 && warm.is_ok(); ++i) warm = replay();
  while_held();
  Result<TimingStats> timed = warm.is_ok() ? time_launches(replay, stream, reps) : Result<TimingStats>(warm);
  (void)cudaStreamSynchronize(stream);
  (void)cudaGraphExecDestroy(exec);
  return timed;
}

}  // namespace crosspoint::bench
