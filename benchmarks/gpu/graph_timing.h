// Shared by the GPU micro-benchmarks: abort-on-error checks and the CUDA-graph timer.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

#include "common/status.h"
#include "kernels/cuda/cuda_status.h"

// A benchmark has no one to return an error to: print where it failed and exit.
#define BENCH_CHECK(expr)                                                               \
  do {                                                                                  \
    const ::crosspoint::Status st_ = (expr);                                            \
    if (!st_.is_ok()) {                                                                 \
      std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, st_.to_string().c_str()); \
      std::exit(1);                                                                     \
    }                                                                                   \
  } while (0)
#define BENCH_CUDA(expr) BENCH_CHECK(::crosspoint::cuda::cuda_status((expr), #expr))

namespace crosspoint::bench {

// Runs `enqueue` once eagerly (plans, errors), captures it into a graph, replays it 3 times
// to warm up and returns the median time in ms of `reps` timed replays.
inline double time_graph(const std::function<Status()>& enqueue, cudaStream_t s, int reps) {
  BENCH_CHECK(enqueue());
  BENCH_CUDA(cudaStreamSynchronize(s));
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  BENCH_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  const Status st = enqueue();
  BENCH_CUDA(cudaStreamEndCapture(s, &graph));
  BENCH_CHECK(st);
  BENCH_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  for (int i = 0; i < 3; ++i) BENCH_CUDA(cudaGraphLaunch(exec, s));
  cudaEvent_t start, stop;
  BENCH_CUDA(cudaEventCreate(&start));
  BENCH_CUDA(cudaEventCreate(&stop));
  std::vector<double> times;
  for (int i = 0; i < reps; ++i) {
    BENCH_CUDA(cudaEventRecord(start, s));
    BENCH_CUDA(cudaGraphLaunch(exec, s));
    BENCH_CUDA(cudaEventRecord(stop, s));
    BENCH_CUDA(cudaEventSynchronize(stop));
    float ms = 0;
    BENCH_CUDA(cudaEventElapsedTime(&ms, start, stop));
    times.push_back(ms);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

}  // namespace crosspoint::bench
