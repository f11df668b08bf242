#include "model/tensor_parallel_model.h"

#include <algorithm>
#include <string>
#include <thread>

#include "model/linear_shard.h"

namespace crosspoint {

Result<std::unique_ptr<TensorParallelModel>> TensorParallelModel::create(const Model& model, int32_t world_size,
                                                                         int32_t kernel_threads) {
  const ModelConfig& c = model.config();
  std::unique_ptr<TensorParallelModel> tp(new TensorParallelModel(model));
  CROSSPOINT_ASSIGN_OR_RETURN(tp->ranks_, plan_tensor_parallel(c, world_size));
  const int32_t threads = kernel_threads > 0 ? kernel_threads : global_thread_pool().num_threads();
  const int64_t D = c.head_dim, L = c.num_hidden_layers;
  for (const TensorParallelRank& r : tp->ranks_) {
    std::vector<std::unique_ptr<LinearWeight>> owned;
    size_t bytes = 0;
    auto cut = [&](const LinearWeight& w, ShardAxis axis, IndexRange range,
                   const std::string& name) -> Result<const LinearWeight*> {
      CROSSPOINT_ASSIGN_OR_RETURN(auto shard, shard_linear_weight(w, axis, range, r.rank == 0, name));
      bytes += shard->weight_bytes();
      owned.push_back(std::move(shard));
      return owned.back().get();
    };
    const std::string on_rank = " (rank " + std::to_string(r.rank) + " of " + std::to_string(world_size) + ")";
    RankShare share;
    share.num_heads = r.q_heads.size();
    share.num_kv_heads = r.kv_heads.size();
    share.intermediate = r.intermediate.size();
    share.first_cache_layer = static_cast<int32_t>(r.rank * L);
    share.num_cache_layers = static_cast<int32_t>(world_size * L);
    share.vocab = r.vocab;
    const IndexRange q{r.q_heads.begin * D, r.q_heads.end * D}, kv{r.kv_heads.begin * D, r.kv_heads.end * D};
    for (int64_t i = 0; i < L; ++i) {
      const DecoderLayerWeights& w = model.layers()[i];
      const std::string p = "model.layers." + std::to_string(i) + ".";
      RankLayerLinears l;
      CROSSPOINT_ASSIGN_OR_RETURN(l.q_proj, cut(*w.q_proj, ShardAxis::kOutput, q, p + "self_attn.q_proj" + on_rank));
      CROSSPOINT_ASSIGN_OR_RETURN(l.k_proj, cut(*w.k_proj, ShardAxis::kOutput, kv, p + "self_attn.k_proj" + on_rank));
      CROSSPOINT_ASSIGN_OR_RETURN(l.v_proj, cut(*w.v_proj, ShardAxis::kOutput, kv, p + "self_attn.v_proj" + on_rank));
      CROSSPOINT_ASSIGN_OR_RETURN(l.o_proj, cut(*w.o_proj, ShardAxis::kInput, q, p + "self_attn.o_proj" + on_rank));
      CROSSPOINT_ASSIGN_OR_RETURN(l.gate_proj,
                                  cut(*w.gate_proj, ShardAxis::kOutput, r.intermediate, p + "mlp.gate_proj" + on_rank));
      CROSSPOINT_ASSIGN_OR_RETURN(l.up_proj,
                                  cut(*w.up_proj, ShardAxis::kOutput, r.intermediate, p + "mlp.up_proj" + on_rank));
      CROSSPOINT_ASSIGN_OR_RETURN(l.down_proj,
                                  cut(*w.down_proj, ShardAxis::kInput, r.intermediate, p + "mlp.down_proj" + on_rank));
      share.layers.push_back(l);
    }
    if (r.vocab.size() > 0) {
      CROSSPOINT_ASSIGN_OR_RETURN(share.lm_head,
                                  cut(model.lm_head(), ShardAxis::kOutput, r.vocab, "lm_head" + on_rank));
    }
    tp->shards_.push_back(std::move(owned));
    tp->rank_linear_bytes_.push_back(bytes);
    tp->pools_.push_back(std::make_unique<ThreadPool>(std::max(1, threads / world_size)));
    tp->shares_.push_back(std::move(share));
  }
  tp->all_reduce_ = std::make_unique<InProcessAllReduce>(world_size);
  InProcessAllReduce* reduce = tp->all_reduce_.get();
  for (int32_t r = 0; r < world_size && world_size > 1; ++r)
    tp->shares_[r].all_reduce = [reduce, r](float* data, int64_t n) { reduce->sum(r, data, n); };
  return tp;
}

KvCacheShape TensorParallelModel::kv_cache_shape(int32_t num_blocks, int32_t block_size, DType kv_dtype) const {
  KvCacheShape shape = model_.kv_cache_shape(num_blocks, block_size, kv_dtype);
  shape.num_layers *= world_size();
  shape.num_kv_heads = static_cast<int32_t>(ranks_[0].kv_heads.size());
  return shape;
}

Status TensorParallelModel::forward(const ForwardBatch& batch, CpuKvCache& kv_cache, float* logits) const {
  const int32_t world = world_size();
  std::vector<Status> status(world);
  auto run_rank = [&](int32_t r) {
    ThreadPoolScope scope(*pools_[r]);
    status[r] = model_.forward_share(batch, kv_cache, shares_[r], logits);
    if (!status[r].is_ok() && world > 1) all_reduce_->leave(r);
  };
  {
    std::vector<std::jthread> threads;
    for (int32_t r = 1; r < world; ++r) threads.emplace_back(run_rank, r);
    run_rank(0);
  }
  for (const Status& s : status) {
    if (!s.is_ok()) {
      all_reduce_->reset();
      return s;
    }
  }
  return Status::ok();
}

}  // namespace crosspoint
