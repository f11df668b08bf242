#include "quant/cuda/cuda_sequence_forward.h"

#include <string>

#include "quant/sequence_forward.h"

namespace crosspoint {

Result<std::unique_ptr<CudaSequenceForward>> CudaSequenceForward::create(const Model& model, int32_t max_tokens,
                                                                         bool kv_fp8) {
  if (max_tokens < 2) return invalid_argument("eval --device cuda: sequences of at least 2 tokens");
  cuda::CudaModelOptions options;
  const int32_t blocks = (max_tokens + options.block_size - 1) / options.block_size;
  options.max_num_tokens = max_tokens;
  options.max_num_seqs = 1;
  options.max_num_logits = max_tokens;
  options.max_model_len = blocks * options.block_size;
  options.kv_fp8 = kv_fp8;
  std::unique_ptr<CudaSequenceForward> f(new CudaSequenceForward());
  CROSSPOINT_ASSIGN_OR_RETURN(f->model_, cuda::CudaModel::create(model, options));
  CROSSPOINT_ASSIGN_OR_RETURN(f->kv_cache_, f->model_->make_kv_cache(blocks));
  CROSSPOINT_ASSIGN_OR_RETURN(f->inputs_, f->model_->make_step_inputs());
  f->max_tokens_ = max_tokens;
  return f;
}

Status CudaSequenceForward::logits(const std::vector<int32_t>& tokens, std::vector<float>& out) {
  if (static_cast<int64_t>(tokens.size()) > max_tokens_) {
    return invalid_argument("eval --device cuda: a sequence of " + std::to_string(tokens.size()) +
                            " tokens is longer than the " + std::to_string(max_tokens_) + " the model was set up for");
  }
  HostForwardBatch batch;
  int32_t total_blocks = 0;
  CROSSPOINT_RETURN_IF_ERROR(
      build_sequence_batch({tokens}, /*all_positions=*/true, model_->block_size(), batch, &total_blocks));
  const ForwardBatch view = batch.view();
  out.assign(view.logits_token_idx.size() * static_cast<size_t>(model_->vocab_size()), 0.0f);
  return model_->forward_host(view, kv_cache_, inputs_, out.data());
}

}  // namespace crosspoint
