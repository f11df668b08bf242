#include "runner/cuda/cuda_model_runner.h"

#include <algorithm>
#include <string>

#include "common/clock.h"
#include "common/dtype.h"
#include "common/log.h"
#include "common/thread_pool.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/decoder_ops.h"
#include "kernels/cuda/sampling.h"
#include "kernels/sampling.h"
#include "model/host_forward_batch.h"
#include "runner/kv_budget.h"
#include "runner/request_sampler.h"
#include "runner/token_logprobs.h"

namespace crosspoint::cuda {
namespace {

// A logit the model wrote (fp16, or bf16 for a bf16 model) as f32: exact either way.
float logit_value(uint16_t bits, bool bf16) { return bf16 ? bf16_to_f32(bits) : f16_to_f32(bits); }

}  // namespace

Result<std::unique_ptr<CudaModelRunner>> CudaModelRunner::create(std::unique_ptr<CudaModel> model,
                                                                 const CudaRunnerOptions& options,
                                                                 std::unique_ptr<CudaFollowerRanks> followers) {
  CROSSPOINT_CHECK(model != nullptr, "CudaModelRunner: no model");
  std::unique_ptr<CudaModelRunner> runner(new CudaModelRunner(std::move(model), options));
  runner->followers_ = std::move(followers);
  CROSSPOINT_RETURN_IF_ERROR(runner->allocate_kv_cache());
  if (runner->followers_ != nullptr)
    CROSSPOINT_RETURN_IF_ERROR(
        runner->followers_->allocate_kv_caches(static_cast<int32_t>(runner->memory_.num_kv_blocks)));
  const StepInputCapacity& cap = runner->model_->capacity();
  runner->buckets_ = graph_bucket_sizes(std::min({cap.max_num_seqs, cap.max_num_tokens, cap.max_num_logits}));
  // One attention bound, max-model-len, for every decode graph and eager decode step: graphs
  // per smaller context bound failed to capture for the 7B model.
  runner->context_bounds_ = {runner->model_->max_model_len()};
  // The runner's sampling buffers: greedy tokens on the device and their host copy, plus the
  // staging of the one way sampled rows are drawn.
  const size_t token_bytes = static_cast<size_t>(cap.max_num_logits) * sizeof(int32_t);
  CROSSPOINT_ASSIGN_OR_RETURN(runner->tokens_, DeviceBuffer::allocate(token_bytes, "sampled tokens"));
  CROSSPOINT_ASSIGN_OR_RETURN(runner->tokens_host_, PinnedBuffer::allocate(token_bytes, "sampled tokens"));
  if (options.sample_on_gpu) {
    const size_t params_bytes = static_cast<size_t>(cap.max_num_logits) * sizeof(SampledRowParams);
    CROSSPOINT_ASSIGN_OR_RETURN(runner->sampled_params_host_,
                                PinnedBuffer::allocate(params_bytes, "sampled row parameters"));
    CROSSPOINT_ASSIGN_OR_RETURN(runner->sampled_params_,
                                DeviceBuffer::allocate(params_bytes, "sampled row parameters"));
  } else {
    CROSSPOINT_RETURN_IF_ERROR(runner->ensure_logits_host());
  }
  if (options.enforce_eager) return runner;
  Stopwatch capture_timer;
  size_t free_before = 0, free_after = 0, total = 0;
  (void)cudaMemGetInfo(&free_before, &total);
  const Status status = runner->capture_graphs();
  (void)cudaMemGetInfo(&free_after, &total);
  runner->graph_report_.capture_s = capture_timer.elapsed_seconds();
  if (!status.is_ok()) {
    runner->destroy_graphs();
    runner->graph_report_.fallback_reason = status.message();
    log_warning("CUDA graph capture failed, running eagerly (as with --enforce-eager): {}", status.message());
  } else {
    runner->graph_report_.graph_bytes = free_before > free_after ? free_before - free_after : 0;
  }
  return runner;
}

CudaModelRunner::~CudaModelRunner() {
  destroy_graphs();
  // Nothing in flight on the KV cache and staging when they are freed (before the model).
  if (model_ != nullptr) (void)cudaStreamSynchronize(model_->stream());
}

Status CudaModelRunner::allocate_kv_cache() {
  const CudaModel& m = *model_;
  const CudaRunnerOptions& o = options_;
  CROSSPOINT_CUDA_RETURN_IF_ERROR(cudaSetDevice(m.options().device), "cudaSetDevice");
  CROSSPOINT_ASSIGN_OR_RETURN(inputs_, m.make_step_inputs());
  // What is free now: after the model's weights, activations and profile step, and the staging
  // (counted with the activations, the buffers every step uses).
  size_t free = 0, total = 0;
  CROSSPOINT_CUDA_RETURN_IF_ERROR(cudaMemGetInfo(&free, &total), "cudaMemGetInfo");
  memory_ = m.memory();
  const size_t free_after_model = memory_.total_bytes - memory_.used_before_kv_bytes;
  memory_.activation_bytes += free_after_model > free ? free_after_model - free : 0;
  memory_.used_before_kv_bytes = total - free;
  memory_.reserve_bytes = o.reserve_bytes;

  const int32_t block_size = m.block_size();
  int64_t num_blocks = o.num_kv_blocks;
  if (num_blocks <= 0) {
    KvBudgetInputs in;
    in.total_bytes = total;
    in.free_bytes = free;
    in.gpu_memory_utilization = o.gpu_memory_utilization;
    in.reserve_bytes = o.reserve_bytes;
    in.bytes_per_block = memory_.kv_bytes_per_token * block_size;
    in.memory_budget_bytes = o.memory_budget_bytes;
    in.own_bytes = memory_.weight_bytes + memory_.activation_bytes;
    CROSSPOINT_ASSIGN_OR_RETURN(KvBudget budget, kv_budget_for_utilization(in));
    num_blocks = budget.num_blocks;
  }
  // Block ids and slots are int32 on the device.
  num_blocks = std::min<int64_t>(num_blocks, (int64_t{1} << 31) / block_size - 1);
  CROSSPOINT_ASSIGN_OR_RETURN(kv_cache_, m.make_kv_cache(static_cast<int32_t>(num_blocks)));
  memory_.num_kv_blocks = num_blocks;
  memory_.kv_tokens = num_blocks * block_size;
  memory_.kv_bytes = kv_cache_.bytes();
  return Status::ok();
}

Status CudaModelRunner::ensure_logits_host() {
  if (!logits_host_.empty()) return Status::ok();
  const size_t logits_bytes = static_cast<size_t>(model_->capacity().max_num_logits) * model_->vocab_size() * 2;
  CROSSPOINT_ASSIGN_OR_RETURN(logits_host_, PinnedBuffer::allocate(logits_bytes, "16-bit logits copied to the host"));
  return Status::ok();
}

void CudaModelRunner::destroy_graphs() {
  for (auto& [key, exec] : graphs_) (void)cudaGraphExecDestroy(exec);
  graphs_.clear();
  graph_report_.captured_buckets.clear();
  graph_report_.context_bounds.clear();
}

Status CudaModelRunner::capture_graphs() {
  for (int32_t bucket : buckets_) {
    for (int32_t bound : context_bounds_) {
      const Status captured = capture_bucket(bucket, bound);
      // The followers captured theirs meanwhile; a failure on any rank leaves every rank eager.
      const Status theirs = followers_ != nullptr ? followers_->wait() : Status::ok();
      CROSSPOINT_RETURN_IF_ERROR(captured);
      CROSSPOINT_RETURN_IF_ERROR(theirs);
    }
    graph_report_.captured_buckets.push_back(bucket);
  }
  graph_report_.context_bounds = context_bounds_;
  return Status::ok();
}

// One warm-up step eagerly (kernels loaded, cuBLASLt plans cached), then the same launches
// captured: forward plus the greedy argmax over all `bucket` rows, attention sized for
// contexts up to `context_bound`. Every row is padding here (no K/V stored); the graph reads
// its inputs from the fixed step-input buffer.
Status CudaModelRunner::capture_bucket(int32_t bucket, int32_t context_bound) {
  CudaModel& m = *model_;
  // One padding sequence (token 0 at position 0 in block 0), grown to the bucket.
  static constexpr int32_t kToken[1] = {0}, kBlock[1] = {0};
  HostForwardBatch single;
  single.clear(1);
  single.add_sequence(kToken, /*num_cached=*/0, kBlock, LogitsWanted::kLast);
  CROSSPOINT_ASSIGN_OR_RETURN(
      CudaForwardBatch device,
      upload_padded_decode(single.view(), bucket, context_bound, /*num_stored_tokens=*/0, RankLaunch::kCapture));
  const int V = m.vocab_size();
  CROSSPOINT_RETURN_IF_ERROR(m.forward(device, kv_cache_));
  CROSSPOINT_RETURN_IF_ERROR(argmax_rows(m.logits(), V, tokens(), bucket, V, m.stream(), m.activation_dtype()));
  CROSSPOINT_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(m.stream()), "graph warm-up step");

  CROSSPOINT_CUDA_RETURN_IF_ERROR(cudaStreamBeginCapture(m.stream(), cudaStreamCaptureModeThreadLocal),
                                  "cudaStreamBeginCapture");
  Status launched = m.forward(device, kv_cache_);
  if (launched.is_ok()) launched = argmax_rows(m.logits(), V, tokens(), bucket, V, m.stream(), m.activation_dtype());
  cudaGraph_t graph = nullptr;
  const cudaError_t end = cudaStreamEndCapture(m.stream(), &graph);
  if (!launched.is_ok() || end != cudaSuccess) {
    if (graph != nullptr) (void)cudaGraphDestroy(graph);
    (void)cudaGetLastError();
    if (!launched.is_ok())
      return Status(launched.code(), "bucket " + std::to_string(bucket) + " x context " +
                                         std::to_string(context_bound) + ": " + launched.message());
    return cuda_status(end, "cudaStreamEndCapture");
  }
  cudaGraphExec_t exec = nullptr;
  const cudaError_t inst = cudaGraphInstantiate(&exec, graph, 0);
  (void)cudaGraphDestroy(graph);
  CROSSPOINT_CUDA_RETURN_IF_ERROR(inst, "cudaGraphInstantiate");
  graphs_[{bucket, context_bound}] = exec;
  // One replay, so a broken graph fails here and not in the first request.
  CROSSPOINT_CUDA_RETURN_IF_ERROR(cudaGraphLaunch(exec, m.stream()), "cudaGraphLaunch");
  CROSSPOINT_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(m.stream()), "graph test replay");
  return Status::ok();
}

Result<StepOutput> CudaModelRunner::execute(const BatchPlan& plan) {
  StepOutput output;
  output.sampled_token_ids.assign(plan.seqs.size(), -1);
  if (plan.seqs.empty()) return output;
  CudaModel& m = *model_;
  // The engine calls from its own thread; the device is per thread in the CUDA runtime.
  CROSSPOINT_CUDA_RETURN_IF_ERROR(cudaSetDevice(m.options().device), "cudaSetDevice");
  Stopwatch forward_timer;
  const ForwardBatch batch = builder_.build(plan);
  // Decode-only steps are padded to their bucket whether or not a graph exists for it, so
  // eager and graph steps run the same launches on the same shapes (identical tokens; the
  // two differ only in launch overhead).
  // A step with prompt logprob rows has more logits rows than sequences: never padded.
  const bool padded_decode = is_decode_only(plan) && builder_.prompt_logits_rows().empty();
  int32_t bucket = padded_decode ? choose_graph_bucket(buckets_, static_cast<int32_t>(plan.seqs.size())) : -1;
  const int32_t context_bound =
      bucket > 0 ? choose_context_bound(context_bounds_,
                                        *std::max_element(batch.seq_context_len.begin(), batch.seq_context_len.end()))
                 : -1;
  if (context_bound <= 0) bucket = -1;
  int32_t num_rows = 0;
  bool argmax_done = false;
  if (bucket > 0) {
    CROSSPOINT_ASSIGN_OR_RETURN(
        CudaForwardBatch device,
        upload_padded_decode(batch, bucket, context_bound, batch.num_tokens(),
                             graphs_.count({bucket, context_bound}) != 0 ? RankLaunch::kGraph : RankLaunch::kEager));
    const auto graph = graphs_.find({bucket, context_bound});
    if (graph != graphs_.end()) {
      // The graph baked in the same device addresses and bounds.
      CROSSPOINT_CUDA_RETURN_IF_ERROR(cudaGraphLaunch(graph->second, m.stream()), "cudaGraphLaunch");
      ++num_graph_steps_;
    } else {
      Status status = m.forward(device, kv_cache_);
      if (!status.is_ok()) return Status(status.code(), "forward pass: " + status.message());
      CROSSPOINT_RETURN_IF_ERROR(
          argmax_rows(m.logits(), m.vocab_size(), tokens(), bucket, m.vocab_size(), m.stream(), m.activation_dtype()));
      ++num_eager_steps_;
    }
    num_rows = bucket;
    row_seq_idx_.assign(bucket, -1);
    for (int32_t s = 0; s < static_cast<int32_t>(plan.seqs.size()); ++s) row_seq_idx_[s] = s;
    argmax_done = true;
  } else {
    CROSSPOINT_ASSIGN_OR_RETURN(CudaForwardBatch device,
                                upload({batch, batch.max_blocks_per_seq, batch.num_tokens(), -1, -1}));
    Status status = m.forward(device, kv_cache_);
    if (!status.is_ok()) return Status(status.code(), "forward pass: " + status.message());
    // The sampled rows come first; the prompt logprob rows after them are read by prompt_logprobs().
    row_seq_idx_ = builder_.logits_seq_idx();
    num_rows = static_cast<int32_t>(row_seq_idx_.size());
    ++num_eager_steps_;
  }
  CROSSPOINT_RETURN_IF_ERROR(draw_tokens(plan, row_seq_idx_, num_rows, argmax_done, output));
  if (!builder_.prompt_logits_rows().empty()) {
    Stopwatch prompt_timer;
    CROSSPOINT_RETURN_IF_ERROR(prompt_logprobs(plan, output));
    output.sampling_ms += prompt_timer.elapsed_ms();
  }
  if (followers_ != nullptr) CROSSPOINT_RETURN_IF_ERROR(followers_->wait());
  output.forward_ms = forward_timer.elapsed_ms() - output.sampling_ms;
  return output;
}

Result<CudaForwardBatch> CudaModelRunner::upload(const RankStep& step) {
  if (followers_ != nullptr) followers_->run(step);
  CROSSPOINT_ASSIGN_OR_RETURN(CudaForwardBatch device, inputs_.upload(step.batch, kv_cache_, step.block_table_stride,
                                                                      step.num_stored_tokens, model_->stream()));
  if (step.max_query_len >= 0) device.shape.max_query_len = step.max_query_len;
  if (step.max_context_len >= 0) device.shape.max_context_len = step.max_context_len;
  return device;
}

Result<CudaForwardBatch> CudaModelRunner::upload_padded_decode(const ForwardBatch& batch, int32_t bucket,
                                                               int32_t context_bound, int32_t num_stored_tokens,
                                                               RankLaunch launch) {
  const ForwardBatch padded = padded_.build(batch, bucket);
  return upload({padded, inputs_.capacity().max_blocks_per_seq, num_stored_tokens, 1, context_bound, launch, bucket});
}

bool CudaModelRunner::drawn_on_host(const RequestSamplingParams& sampling) const {
  // Logit bias, penalties and min-p exist only in the host sampler: such rows are copied out
  // whether greedy or not, so they get the CPU runner's tokens.
  if (sampling.processes_logits() || (sampling.min_p > 0.0f && !sampling.is_greedy())) return true;
  return !sampling.is_greedy() && !options_.sample_on_gpu;
}

Status CudaModelRunner::draw_tokens(const BatchPlan& plan, const std::vector<int32_t>& row_seq_idx, int32_t num_rows,
                                    bool argmax_done, StepOutput& output) {
  CudaModel& m = *model_;
  const int V = m.vocab_size();
  const cudaStream_t stream = m.stream();
  if (num_rows == 0) {
    CROSSPOINT_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream), "step");
    return Status::ok();
  }
  // The uniform numbers come from the same per-request generator as on the CPU runner; the
  // pinned arrays are free again because every step ends with a synchronisation.
  Stopwatch sampling_timer;
  SampledRowParams* params = sampled_params_host_.as<SampledRowParams>();
  int32_t num_sampled = 0;
  bool any_greedy = false;
  sampled_rows_.clear();
  logprob_rows_.clear();
  for (int32_t r = 0; r < num_rows; ++r) {
    const int32_t s = row_seq_idx[r];
    if (s < 0 || !plan.seqs[s].sample) continue;
    const ScheduledSequence& seq = plan.seqs[s];
    const bool host_sampled = drawn_on_host(seq.sampling());
    // Rows drawn on the host, and rows that want logprobs however they are drawn, are copied out
    // (before sample_rows below, on the same stream).
    if (host_sampled || seq.sampling().wants_logprobs()) {
      CROSSPOINT_RETURN_IF_ERROR(ensure_logits_host());
      const size_t offset = static_cast<size_t>(r) * V;
      CROSSPOINT_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(logits_host_.as<uint16_t>() + offset, m.logits() + offset,
                                                      static_cast<size_t>(V) * 2, cudaMemcpyDeviceToHost, stream),
                                      "copy logits row");
      if (seq.sampling().wants_logprobs()) logprob_rows_.push_back(r);
    }
    if (host_sampled) {
      sampled_rows_.push_back(r);
      continue;
    }
    if (seq.sampling().is_greedy()) {
      any_greedy = true;
      continue;
    }
    const SamplingParams kernel = kernel_sampling_params(seq.sampling());
    SampledRowParams& p = params[num_sampled++];
    p.logits_row = r;
    p.temperature = kernel.temperature;
    p.top_k = kernel.top_k;
    p.top_p = kernel.top_p;
    p.uniform = token_uniform(seq.sampling(), seq.output_token_idx);
  }
  output.sampling_ms = sampling_timer.elapsed_ms();
  if (any_greedy && !argmax_done)
    CROSSPOINT_RETURN_IF_ERROR(argmax_rows(m.logits(), V, tokens(), num_rows, V, stream, m.activation_dtype()));
  if (num_sampled > 0) {
    CROSSPOINT_CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(sampled_params_.as<SampledRowParams>(), params, num_sampled * sizeof(SampledRowParams),
                        cudaMemcpyHostToDevice, stream),
        "copy sampled row parameters");
    // After the argmax (same stream): sampled rows overwrite their argmax tokens.
    CROSSPOINT_RETURN_IF_ERROR(sample_rows(m.logits(), V, num_rows, sampled_params_.as<SampledRowParams>(), num_sampled,
                                           tokens(), V, stream, m.activation_dtype()));
  }
  if (any_greedy || num_sampled > 0)
    CROSSPOINT_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(tokens_host_.as<int32_t>(), tokens(),
                                                    static_cast<size_t>(num_rows) * 4, cudaMemcpyDeviceToHost, stream),
                                    "copy sampled tokens");
  CROSSPOINT_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream), "step");
  for (int32_t r = 0; r < num_rows; ++r) {
    const int32_t s = row_seq_idx[r];
    if (s < 0 || !plan.seqs[s].sample) continue;
    if (!drawn_on_host(plan.seqs[s].sampling())) output.sampled_token_ids[s] = tokens_host_.as<int32_t>()[r];
  }
  if (!sampled_rows_.empty()) {
    Stopwatch host_timer;
    draw_on_host(plan, row_seq_idx, output);
    output.sampling_ms += host_timer.elapsed_ms();
  }
  if (!logprob_rows_.empty()) {
    Stopwatch host_timer;
    logprobs_on_host(plan, row_seq_idx, output);
    output.sampling_ms += host_timer.elapsed_ms();
  }
  return Status::ok();
}

void CudaModelRunner::logprobs_on_host(const BatchPlan& plan, const std::vector<int32_t>& row_seq_idx,
                                       StepOutput& output) {
  const int V = model_->vocab_size();
  const bool bf16 = model_->activation_dtype() == DType::kBF16;
  const uint16_t* logits = logits_host_.as<uint16_t>();
  output.logprobs.resize(plan.seqs.size());
  // Rows are independent (each writes its own entry): spread over the CPU threads like draw_on_host.
  global_thread_pool().parallel_for(logprob_rows_.size(), [&](size_t begin, size_t end) {
    std::vector<float> row(static_cast<size_t>(V));
    for (size_t i = begin; i < end; ++i) {
      const int32_t r = logprob_rows_[i];
      const uint16_t* half_row = logits + static_cast<size_t>(r) * V;
      for (int v = 0; v < V; ++v) row[v] = logit_value(half_row[v], bf16);  // exact; widened to double inside
      const int32_t s = row_seq_idx[r];
      const ScheduledSequence& seq = plan.seqs[s];
      output.logprobs[s] = compute_token_logprobs(row, output.sampled_token_ids[s], seq.sampling().num_logprobs);
    }
  });
}

Status CudaModelRunner::prompt_logprobs(const BatchPlan& plan, StepOutput& output) {
  CudaModel& m = *model_;
  const int V = m.vocab_size();
  const auto& rows = builder_.prompt_logits_rows();
  CROSSPOINT_CHECK(builder_.num_logits_rows() <= m.capacity().max_num_logits,
                   "prompt logprobs: more logits rows in a step than the model holds (the scheduler's limit)");
  CROSSPOINT_RETURN_IF_ERROR(ensure_logits_host());
  // The prompt rows are contiguous after the sampled ones: one copy (the step already synchronised).
  const size_t first = static_cast<size_t>(rows.front().first_row) * V;
  const size_t count = static_cast<size_t>(builder_.num_logits_rows() - rows.front().first_row) * V;
  CROSSPOINT_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(logits_host_.as<uint16_t>() + first, m.logits() + first, count * 2,
                                                  cudaMemcpyDeviceToHost, m.stream()),
                                  "copy prompt logprob rows");
  CROSSPOINT_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(m.stream()), "prompt logprob rows");
  const uint16_t* logits = logits_host_.as<uint16_t>();
  const bool bf16 = m.activation_dtype() == DType::kBF16;
  output.prompt_logprobs.resize(plan.seqs.size());
  for (const auto& r : rows) {
    const ScheduledSequence& seq = plan.seqs[r.seq_idx];
    std::vector<TokenLogprobs>& out = output.prompt_logprobs[r.seq_idx];
    out.resize(static_cast<size_t>(r.num_rows));
    global_thread_pool().parallel_for(static_cast<size_t>(r.num_rows), [&](size_t begin, size_t end) {
      std::vector<float> row(static_cast<size_t>(V));
      for (size_t t = begin; t < end; ++t) {
        const uint16_t* half_row = logits + (static_cast<size_t>(r.first_row) + t) * V;
        for (int v = 0; v < V; ++v) row[v] = logit_value(half_row[v], bf16);  // exact
        out[t] = compute_token_logprobs(row, seq.prompt_logprob_targets[t], seq.sampling().num_prompt_logprobs);
      }
    });
  }
  return Status::ok();
}

void CudaModelRunner::draw_on_host(const BatchPlan& plan, const std::vector<int32_t>& row_seq_idx, StepOutput& output) {
  const int V = model_->vocab_size();
  const bool bf16 = model_->activation_dtype() == DType::kBF16;
  const uint16_t* logits = logits_host_.as<uint16_t>();
  // Each sampled row draws from its own (seed, output index) stream, so rows are independent:
  // spread them over the CPU threads (a full-vocabulary row costs ~ms). The sampler reads f32
  // rows, exactly the CPU runner's input type; fp16 (or bf16) -> f32 is exact.
  global_thread_pool().parallel_for(sampled_rows_.size(), [&](size_t begin, size_t end) {
    std::vector<float> row(static_cast<size_t>(V));
    for (size_t i = begin; i < end; ++i) {
      const int32_t r = sampled_rows_[i];
      const uint16_t* half_row = logits + static_cast<size_t>(r) * V;
      for (int v = 0; v < V; ++v) row[v] = logit_value(half_row[v], bf16);
      const ScheduledSequence& seq = plan.seqs[row_seq_idx[r]];
      output.sampled_token_ids[row_seq_idx[r]] = sample_scheduled_token(row.data(), V, seq);
    }
  });
}

}  // namespace crosspoint::cuda
