// The CUDA runner: BatchPlan -> ForwardBatch (ForwardBatchBuilder) -> packed step inputs (one
// host-to-device copy) -> CudaModel::forward -> greedy rows by argmax_rows on the GPU. As
// CpuModelRunner does on the CPU, it owns the paged KV cache (CudaKvCache), sized at creation
// under --gpu-memory-utilization or --memory-budget (runner/kv_budget.h) from what the model
// measured, and the step-input staging (pinned buffer and its device copy). Rows that
// sample (temperature > 0) are drawn in one of two ways:
//   * host (CudaRunnerOptions' default; `serve --sample-on-host`): each row's fp16 logits are
//     copied out, widened to f32 and drawn by the same per-request sampler as the CPU runner,
//     so a seed gives the CPU runner's tokens.
//   Rows whose request biases or penalises its logits or sets min_p are always drawn this way,
//   greedy or not (the GPU kernels know none of them), so they too get the CPU runner's tokens.
//   * GPU (CudaRunnerOptions::sample_on_gpu, serve's default): one sample_rows launch
//     (kernels/cuda/sampling.h) after the argmax overwrites their entries and only int32 token
//     ids come back. Each row's uniform number still comes from the request's (seed, output
//     index) generator on the host, so a seed fixes the tokens, but they differ from the host
//     sampler's for the same seed: the GPU walks the kept tokens in id order, the host sampler in
//     probability order (same distribution; see sampling.h).
//
// Rows whose request wants logprobs are copied out as fp16 too, however they are drawn, and their
// logprobs computed on the host from those exact values (runner/token_logprobs.h); other requests
// cost nothing for it. So are the prompt positions of requests that want prompt logprobs: their
// rows follow the sampled ones (at most the scheduler's max_prompt_logprob_rows per step).
//
// Decode-only steps are padded to the smallest bucket that holds them (graph_buckets.h) and
// replay the CUDA graph captured at start-up for that bucket and the smallest context bound
// above their longest context; with enforce_eager (or a failed capture)
// the same padded launches run eagerly, so both give identical tokens. Other steps (prefill
// chunks, mixed steps, batches above the largest bucket) run eagerly at their own size.
//
// Split over GPUs (serve -tp N), the runner's model is rank 0 and CudaFollowerRanks the others:
// every upload, step and graph capture is handed to them too (cuda_follower_ranks.h).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <map>
#include <utility>
#include <string>
#include <memory>
#include <vector>

#include "model/cuda/cuda_kv_cache.h"
#include "model/cuda/cuda_model.h"
#include "model/cuda/device_buffer.h"
#include "model/cuda/step_input_staging.h"
#include "runner/cuda/cuda_follower_ranks.h"
#include "runner/graph_buckets.h"
#include "runner/forward_batch_builder.h"
#include "runner/runner.h"

namespace crosspoint::cuda {

struct CudaRunnerOptions {
  bool enforce_eager = false;  // no CUDA graphs
  bool sample_on_gpu = false;  // sampled rows drawn by sample_rows on the GPU (see above)
  // The KV cache's size (its dtype is the model's: CudaModelOptions::kv_fp8).
  int64_t num_kv_blocks = 0;            // > 0: exactly this many blocks, the budgets ignored (tests, generate)
  double gpu_memory_utilization = 0.9;  // fraction of the GPU's total memory this process may use
  size_t memory_budget_bytes = 0;       // > 0: bytes for weights + activations + reserve + KV, not the fraction
  size_t reserve_bytes = 0;             // kept free after the KV cache (the graphs captured next)
};

// What graph capture did, for the startup log.
struct CudaGraphReport {
  std::vector<int32_t> captured_buckets;  // batch sizes with graphs
  std::vector<int32_t> context_bounds;    // one graph per batch size and context bound
  size_t graph_bytes = 0;                 // device memory the graphs took (measured)
  double capture_s = 0;
  std::string fallback_reason;  // non-empty when capture failed and the runner is eager
};

class CudaModelRunner : public Runner {
 public:
  // Allocates the step-input staging and the KV cache (failing, with the numbers, when no block
  // fits the budget), then captures the graphs unless options.enforce_eager; a failed capture
  // logs a warning and leaves the runner eager (reported in graph_report().fallback_reason).
  // With followers (serve -tp N): the model is rank 0 of a split, the followers the other ranks
  // (created, KV caches not yet allocated); each step and each graph capture runs on all of them.
  static Result<std::unique_ptr<CudaModelRunner>> create(std::unique_ptr<CudaModel> model,
                                                         const CudaRunnerOptions& options,
                                                         std::unique_ptr<CudaFollowerRanks> followers = nullptr);
  ~CudaModelRunner() override;

  Result<StepOutput> execute(const BatchPlan& plan) override;

  CudaModel& model() { return *model_; }
  const CudaKvCache& kv_cache() const { return kv_cache_; }
  // The model's report with the KV cache filled in (the startup log prints it).
  const CudaMemoryReport& memory() const { return memory_; }
  const CudaGraphReport& graph_report() const { return graph_report_; }
  // Steps run through a graph and eagerly so far (tests check both paths are taken).
  int64_t num_graph_steps() const { return num_graph_steps_; }
  int64_t num_eager_steps() const { return num_eager_steps_; }

 private:
  CudaModelRunner(std::unique_ptr<CudaModel> model, const CudaRunnerOptions& options)
      : model_(std::move(model)), options_(options) {}
  // The staging, then the KV cache in what the budget leaves (memory_ filled).
  Status allocate_kv_cache();
  Status capture_graphs();
  Status capture_bucket(int32_t bucket, int32_t context_bound);
  void destroy_graphs();
  // After forward (and greedy argmax): draws the sampled rows (on the GPU or the host, as the
  // options say), copies the token ids out and fills output.
  Status draw_tokens(const BatchPlan& plan, const std::vector<int32_t>& row_seq_idx, int32_t num_rows, bool argmax_done,
                     StepOutput& output);
  // Whether a row of this request is drawn by the host sampler (see the top of this file).
  bool drawn_on_host(const RequestSamplingParams& sampling) const;
  // The host half of the default path: rows in sampled_rows_ drawn from logits_host_.
  void draw_on_host(const BatchPlan& plan, const std::vector<int32_t>& row_seq_idx, StepOutput& output);
  // Logprobs of the rows in logprob_rows_ from logits_host_, once every row's token is known.
  void logprobs_on_host(const BatchPlan& plan, const std::vector<int32_t>& row_seq_idx, StepOutput& output);
  // The logprobs of the step's prompt positions (ForwardBatchBuilder::prompt_logits_rows), their
  // fp16 rows copied out after the tokens are drawn.
  Status prompt_logprobs(const BatchPlan& plan, StepOutput& output);
  // logits_host_ allocated (at creation for host sampling, at the first logprobs request otherwise).
  Status ensure_logits_host();
  // A decode-only batch padded to `bucket` rows and uploaded, attention bounded by
  // context_bound: the one shape both graph capture and decode steps launch.
  Result<CudaForwardBatch> upload_padded_decode(const ForwardBatch& batch, int32_t bucket, int32_t context_bound,
                                                int32_t num_stored_tokens, RankLaunch launch);
  // Uploads the step on rank 0 after handing it to the followers, if any.
  Result<CudaForwardBatch> upload(const RankStep& step);
  int32_t* tokens() const { return tokens_.as<int32_t>(); }

  std::unique_ptr<CudaModel> model_;
  CudaRunnerOptions options_;
  std::unique_ptr<CudaFollowerRanks> followers_;  // ranks 1.. of a split, else null
  CudaMemoryReport memory_;
  StepInputStaging inputs_;  // the step inputs; fixed device addresses the graphs read
  CudaKvCache kv_cache_;     // fixed for the runner's lifetime: the graphs captured its addresses
  ForwardBatchBuilder builder_;
  PaddedDecodeBatch padded_;
  std::vector<int32_t> buckets_;                                   // decode batch sizes (graph_bucket_sizes)
  std::vector<int32_t> context_bounds_;                            // attention context bounds graphs are captured for
  std::map<std::pair<int32_t, int32_t>, cudaGraphExec_t> graphs_;  // (bucket, context bound) -> graph
  CudaGraphReport graph_report_;
  std::vector<int32_t> row_seq_idx_;  // [num_rows] plan.seqs index of each logits row (-1: padding)
  DeviceBuffer tokens_;               // [max_num_logits] int32: argmax, then sampled rows overwrite theirs
  PinnedBuffer tokens_host_;          // [max_num_logits] int32, their host copy
  // Sampling on the GPU only (sample_on_gpu; empty otherwise):
  PinnedBuffer sampled_params_host_;  // [max_num_logits] SampledRowParams, this step's sampled rows
  DeviceBuffer sampled_params_;       // [max_num_logits] SampledRowParams, their device copy
  // Rows copied to the host: sampled there (sample_on_gpu false), or wanting logprobs. Allocated
  // only when one of those happens.
  PinnedBuffer logits_host_;           // [max_num_logits, vocab] fp16, those rows copied out
  std::vector<int32_t> sampled_rows_;  // logits rows the host sampler draws this step
  std::vector<int32_t> logprob_rows_;  // logits rows whose sequence wants logprobs this step
  int64_t num_graph_steps_ = 0;
  int64_t num_eager_steps_ = 0;
};

}  // namespace crosspoint::cuda
