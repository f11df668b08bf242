// The CUDA runner: BatchPlan -> ForwardBatch (ForwardBatchBuilder) -> packed step inputs (one
// host-to-device copy) -> CudaModel::forward -> tokens drawn on the GPU: greedy rows by
// argmax_rows, rows that sample (temperature > 0) by one sample_rows launch
// (kernels/cuda/sampling.h) after it, which overwrites their entries; only the int32 token ids
// come back to the host. Each sampled row's uniform number is drawn on the host from the
// request's (seed, output index) generator, exactly as the CPU runner draws it, and copied up
// with the row's temperature / top_k / top_p (a small pinned array, same stream). A seed
// therefore fixes the tokens on the GPU, but they differ from the CPU runner's for the same
// seed: the GPU walks the kept tokens in id order, the host sampler in probability order (same
// distribution; see sampling.h). The engine has no logprobs, so no logits row is copied out.
//
// Decode-only steps are padded to the smallest bucket that holds them (graph_buckets.h) and
// replay the CUDA graph captured at start-up for that bucket and the smallest context bound
// above their longest context; with enforce_eager (or a failed capture)
// the same padded launches run eagerly, so both give identical tokens. Other steps (prefill
// chunks, mixed steps, batches above the largest bucket) run eagerly at their own size.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <map>
#include <utility>
#include <string>
#include <memory>
#include <vector>

#include "model/cuda/cuda_model.h"
#include "model/cuda/device_buffer.h"
#include "runner/cuda/graph_buckets.h"
#include "runner/forward_batch_builder.h"
#include "runner/runner.h"

namespace crosspoint::cuda {

struct CudaRunnerOptions {
  bool enforce_eager = false;  // no CUDA graphs
};

// What graph capture did, for the startup log.
struct CudaGraphReport {
  std::vector<int32_t> captured_buckets;  // batch sizes with graphs
  std::vector<int32_t> context_bounds;    // one graph per batch size and context bound
  size_t graph_bytes = 0;                 // device memory the graphs took (measured)
  double capture_s = 0;
  std::string fallback_reason;            // non-empty when capture failed and the runner is eager
};

class CudaModelRunner : public Runner {
 public:
  // Captures the graphs unless options.enforce_eager; a failed capture logs a warning and
  // leaves the runner eager (reported in graph_report().fallback_reason).
  static Result<std::unique_ptr<CudaModelRunner>> create(std::unique_ptr<CudaModel> model,
                                                         const CudaRunnerOptions& options);
  ~CudaModelRunner() override;

  Result<StepOutput> execute(const BatchPlan& plan) override;

  CudaModel& model() { return *model_; }
  const CudaGraphReport& graph_report() const { return graph_report_; }
  // Steps run through a graph and eagerly so far (tests check both paths are taken).
  int64_t num_graph_steps() const { return num_graph_steps_; }
  int64_t num_eager_steps() const { return num_eager_steps_; }

 private:
  explicit CudaModelRunner(std::unique_ptr<CudaModel> model) : model_(std::move(model)) {}
  Status capture_graphs();
  Status capture_bucket(int32_t bucket, int32_t context_bound);
  void destroy_graphs();
  // After forward (and greedy argmax): draws the sampled rows on the GPU, copies the token ids
  // out and fills output.
  Status draw_tokens(const BatchPlan& plan, const std::vector<int32_t>& row_seq_idx, int32_t num_rows,
                     bool argmax_done, StepOutput& output);

  std::unique_ptr<CudaModel> model_;
  ForwardBatchBuilder builder_;
  PaddedDecodeBatch padded_;
  std::vector<int32_t> buckets_;         // decode batch sizes (graph_bucket_sizes)
  std::vector<int32_t> context_bounds_;  // attention context bounds (graph_context_bounds)
  std::map<std::pair<int32_t, int32_t>, cudaGraphExec_t> graphs_;  // (bucket, context bound) -> graph
  CudaGraphReport graph_report_;
  std::vector<int32_t> row_seq_idx_;  // [num_rows] plan.seqs index of each logits row (-1: padding)
  PinnedBuffer sampled_params_host_;  // [max_num_logits] SampledRowParams, this step's sampled rows
  DeviceBuffer sampled_params_;       // [max_num_logits] SampledRowParams, their device copy
  int64_t num_graph_steps_ = 0;
  int64_t num_eager_steps_ = 0;
};

}  // namespace crosspoint::cuda
