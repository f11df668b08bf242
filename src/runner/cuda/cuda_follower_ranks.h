// The ranks after the first of a tensor-parallel CUDA runner (serve -tp N --device cuda): rank r
// is a CudaModel on its own GPU holding TensorParallelModel's share r, with a KV cache and
// step-input staging of its own, driven by a thread of its own. The runner is rank 0: it builds
// each step's ForwardBatch, hands it to every follower (run), launches its own forward and, once
// its tokens are drawn, waits for theirs (wait). The forwards meet in the comm's sums after
// o_proj, down_proj and lm_head, so every rank ends the step with the same logits; only rank 0
// samples. Decode steps replay CUDA graphs on every rank, each rank having captured its own
// (collectives included) while rank 0 captured its; a rank without its graph runs the same
// launches eagerly.
#pragma once

#include <cuda_runtime.h>

#include <condition_variable>
#include <cstdint>
#include <map>
#include <utility>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "common/status.h"
#include "model/cuda/cuda_kv_cache.h"
#include "model/cuda/cuda_model.h"
#include "model/cuda/step_input_staging.h"
#include "model/cuda/tensor_parallel_comm.h"
#include "model/forward_batch.h"
#include "model/tensor_parallel_model.h"

namespace crosspoint::cuda {

// How a rank runs a step: eagerly, by capturing its graph for (bucket, context bound) (one
// eager warm-up step, the capture, one replay), or by replaying that graph.
enum class RankLaunch { kEager, kCapture, kGraph };

// One step as rank 0 uploads it: the batch (decode steps already padded to their bucket), its
// block-table stride and stored tokens, the bounds the launches are sized by, and how to run it.
struct RankStep {
  ForwardBatch batch;
  int32_t block_table_stride = 0;
  int32_t num_stored_tokens = 0;
  int32_t max_query_len = -1;    // >= 0: overrides the uploaded shape's (padded decode steps)
  int32_t max_context_len = -1;  // the same; the graph's context bound
  RankLaunch launch = RankLaunch::kEager;
  int32_t bucket = 0;  // kCapture / kGraph: the padded decode batch size
};

class CudaFollowerRanks {
 public:
  // Starts ranks 1 .. world - 1 of `split` (devices[r] for rank r), each creating its CudaModel
  // with `options` and its share on its thread, and returns at once: the caller creates rank 0
  // meanwhile (every create joins the others' sums), then calls wait_created(). model outlives
  // this; split and comm are kept as long as the followers run.
  static std::unique_ptr<CudaFollowerRanks> launch(const Model& model, std::shared_ptr<const TensorParallelModel> split,
                                                   std::shared_ptr<TensorParallelComm> comm,
                                                   const std::vector<int>& devices, const CudaModelOptions& options);
  ~CudaFollowerRanks();
  CudaFollowerRanks(const CudaFollowerRanks&) = delete;
  CudaFollowerRanks& operator=(const CudaFollowerRanks&) = delete;

  // The followers' create() results: the first error, naming its rank.
  Status wait_created();
  // Each follower's KV cache of num_blocks blocks (rank 0's count, sized by its budget).
  Status allocate_kv_caches(int32_t num_blocks);
  // Hands the step to every follower; the batch's spans must stay valid until wait() returns.
  void run(const RankStep& step);
  // Waits for every follower's step (uploaded, launched, its stream finished); the first error.
  Status wait();

  int world_size() const { return static_cast<int>(ranks_.size()) + 1; }
  const CudaModel& model(int rank) const { return *ranks_.at(static_cast<size_t>(rank - 1))->model; }

 private:
  struct Rank {
    int rank = 0;
    int device = 0;
    std::unique_ptr<CudaModel> model;
    CudaKvCache kv;
    StepInputStaging inputs;
    std::map<std::pair<int32_t, int32_t>, cudaGraphExec_t> graphs;  // (bucket, context bound)
    std::thread thread;
    // Guarded by the followers' mutex: create's result, and the step handed over.
    Status created;
    bool has_step = false;
    bool step_done = false;
    Status step_status;
  };
  CudaFollowerRanks() = default;
  void serve(Rank& r, const Model& model, const TensorParallelModel& split, TensorParallelComm& comm,
             CudaModelOptions options);
  Status run_step(Rank& r, const RankStep& step);
  Status capture(Rank& r, const CudaForwardBatch& device, const RankStep& step);

  std::shared_ptr<const TensorParallelModel> split_;
  std::shared_ptr<TensorParallelComm> comm_;
  std::vector<std::unique_ptr<Rank>> ranks_;
  std::mutex mutex_;
  std::condition_variable changed_;
  int num_created_ = 0;
  bool stopping_ = false;
  RankStep step_;
};

}  // namespace crosspoint::cuda
