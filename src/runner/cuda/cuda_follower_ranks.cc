#include "runner/cuda/cuda_follower_ranks.h"

#include <string>
#include <utility>

#include "kernels/cuda/cuda_status.h"

namespace crosspoint::cuda {

std::unique_ptr<CudaFollowerRanks> CudaFollowerRanks::launch(const Model& model,
                                                             std::shared_ptr<const TensorParallelModel> split,
                                                             std::shared_ptr<TensorParallelComm> comm,
                                                             const std::vector<int>& devices,
                                                             const CudaModelOptions& options) {
  std::unique_ptr<CudaFollowerRanks> f(new CudaFollowerRanks());
  f->split_ = std::move(split);
  f->comm_ = std::move(comm);
  for (int r = 1; r < f->split_->world_size(); ++r) {
    auto rank = std::make_unique<Rank>();
    rank->rank = r;
    rank->device = devices.at(static_cast<size_t>(r));
    f->ranks_.push_back(std::move(rank));
  }
  for (auto& rank : f->ranks_)
    rank->thread =
        std::thread([f = f.get(), &r = *rank, &model, options] { f->serve(r, model, *f->split_, *f->comm_, options); });
  return f;
}

CudaFollowerRanks::~CudaFollowerRanks() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  for (auto& r : ranks_)
    if (r->thread.joinable()) r->thread.join();
}

void CudaFollowerRanks::serve(Rank& r, const Model& model, const TensorParallelModel& split, TensorParallelComm& comm,
                              CudaModelOptions options) {
  options.device = r.device;
  options.share = &split.share(r.rank);
  options.rank = r.rank;
  options.comm = &comm;
  Status created = cudaSetDevice(r.device) == cudaSuccess
                       ? Status::ok()
                       : internal_error("cudaSetDevice(" + std::to_string(r.device) + ") failed");
  if (created.is_ok()) {
    Result<std::unique_ptr<CudaModel>> m = CudaModel::create(model, options);
    if (m.is_ok()) r.model = std::move(m).value();
    created = m.status();
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    r.created =
        created.is_ok() ? created : Status(created.code(), "rank " + std::to_string(r.rank) + ": " + created.message());
    ++num_created_;
  }
  changed_.notify_all();
  while (true) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      changed_.wait(lock, [&] { return stopping_ || r.has_step; });
      if (stopping_) break;
    }
    const Status s = run_step(r, step_);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      r.step_status = s;
      r.has_step = false;
      r.step_done = true;
    }
    changed_.notify_all();
  }
  // Freed on the rank's own device, before the model (nothing in flight: each step synchronised).
  for (auto& [key, exec] : r.graphs) (void)cudaGraphExecDestroy(exec);
  r.graphs.clear();
  r.inputs = StepInputStaging();
  r.kv = CudaKvCache();
  r.model.reset();
}

Status CudaFollowerRanks::wait_created() {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [&] { return num_created_ == static_cast<int>(ranks_.size()); });
  for (const auto& r : ranks_) CROSSPOINT_RETURN_IF_ERROR(r->created);
  return Status::ok();
}

Status CudaFollowerRanks::allocate_kv_caches(int32_t num_blocks) {
  int current = 0;
  CROSSPOINT_CUDA_RETURN_IF_ERROR(cudaGetDevice(&current), "cudaGetDevice");
  Status status = Status::ok();
  for (auto& r : ranks_) {
    if (cudaSetDevice(r->device) != cudaSuccess) {
      status = internal_error("cudaSetDevice(" + std::to_string(r->device) + ") failed");
      break;
    }
    Result<CudaKvCache> kv = r->model->make_kv_cache(num_blocks);
    Result<StepInputStaging> inputs = kv.is_ok() ? r->model->make_step_inputs() : Result<StepInputStaging>(kv.status());
    if (!inputs.is_ok()) {
      status = Status(inputs.status().code(),
                      "rank " + std::to_string(r->rank) + "'s KV cache or step inputs: " + inputs.status().message());
      break;
    }
    r->kv = std::move(kv).value();
    r->inputs = std::move(inputs).value();
  }
  CROSSPOINT_CUDA_RETURN_IF_ERROR(cudaSetDevice(current), "cudaSetDevice");
  return status;
}

void CudaFollowerRanks::run(const RankStep& step) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    step_ = step;
    for (auto& r : ranks_) {
      r->has_step = true;
      r->step_done = false;
    }
  }
  changed_.notify_all();
}

Status CudaFollowerRanks::wait() {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [&] {
    for (const auto& r : ranks_)
      if (!r->step_done) return false;
    return true;
  });
  for (const auto& r : ranks_)
    if (!r->step_status.is_ok())
      return Status(r->step_status.code(), "rank " + std::to_string(r->rank) + ": " + r->step_status.message());
  return Status::ok();
}

Status CudaFollowerRanks::run_step(Rank& r, const RankStep& step) {
  CROSSPOINT_ASSIGN_OR_RETURN(CudaForwardBatch device, r.inputs.upload(step.batch, r.kv, step.block_table_stride,
                                                                       step.num_stored_tokens, r.model->stream()));
  if (step.max_query_len >= 0) device.shape.max_query_len = step.max_query_len;
  if (step.max_context_len >= 0) device.shape.max_context_len = step.max_context_len;
  if (step.launch == RankLaunch::kCapture) return capture(r, device, step);
  const auto graph = r.graphs.find({step.bucket, step.max_context_len});
  if (step.launch == RankLaunch::kGraph && graph != r.graphs.end()) {
    CROSSPOINT_CUDA_RETURN_IF_ERROR(cudaGraphLaunch(graph->second, r.model->stream()), "cudaGraphLaunch");
  } else {
    CROSSPOINT_RETURN_IF_ERROR(r.model->forward(device, r.kv));
  }
  CROSSPOINT_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(r.model->stream()), "forward");
  return Status::ok();
}

// As CudaModelRunner::capture_bucket does on rank 0, in the same order, so the collectives of
// the warm-up step, of the capture (recorded, not run) and of the test replay meet rank 0's.
Status CudaFollowerRanks::capture(Rank& r, const CudaForwardBatch& device, const RankStep& step) {
  const cudaStream_t stream = r.model->stream();
  CROSSPOINT_RETURN_IF_ERROR(r.model->forward(device, r.kv));
  CROSSPOINT_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream), "graph warm-up step");
  CROSSPOINT_CUDA_RETURN_IF_ERROR(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal),
                                  "cudaStreamBeginCapture");
  const Status launched = r.model->forward(device, r.kv);
  cudaGraph_t graph = nullptr;
  const cudaError_t end = cudaStreamEndCapture(stream, &graph);
  if (!launched.is_ok() || end != cudaSuccess) {
    if (graph != nullptr) (void)cudaGraphDestroy(graph);
    (void)cudaGetLastError();
    return launched.is_ok() ? cuda_status(end, "cudaStreamEndCapture") : launched;
  }
  cudaGraphExec_t exec = nullptr;
  const cudaError_t inst = cudaGraphInstantiate(&exec, graph, 0);
  (void)cudaGraphDestroy(graph);
  CROSSPOINT_CUDA_RETURN_IF_ERROR(inst, "cudaGraphInstantiate");
  r.graphs[{step.bucket, step.max_context_len}] = exec;
  CROSSPOINT_CUDA_RETURN_IF_ERROR(cudaGraphLaunch(exec, stream), "cudaGraphLaunch");
  CROSSPOINT_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream), "graph test replay");
  return Status::ok();
}

}  // namespace crosspoint::cuda
