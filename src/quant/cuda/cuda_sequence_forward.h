// `eval --device cuda`: whole token sequences through a CudaModel as one prefill each, every
// position's logits back as f32 (quant/eval_metrics.h's SequenceLogits), the GPU twin of
// quant/sequence_forward.h's forward_sequences. It owns the KV cache and step-input staging
// the model runs on. Built only with the CUDA backend.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "common/status.h"
#include "model/cuda/cuda_kv_cache.h"
#include "model/cuda/cuda_model.h"
#include "model/cuda/step_input_staging.h"
#include "model/model.h"

namespace crosspoint {

class CudaSequenceForward {
 public:
  // Uploads `model` (which must outlive this) for sequences of up to max_tokens tokens; kv_fp8:
  // an e4m3 KV cache, as serve --kv-cache-dtype fp8.
  static Result<std::unique_ptr<CudaSequenceForward>> create(const Model& model, int32_t max_tokens, bool kv_fp8);

  // logits: [tokens.size(), vocab] f32.
  Status logits(const std::vector<int32_t>& tokens, std::vector<float>& out);

  const cuda::CudaModel& model() const { return *model_; }

 private:
  CudaSequenceForward() = default;
  std::unique_ptr<cuda::CudaModel> model_;
  cuda::CudaKvCache kv_cache_;  // one sequence of max_tokens
  cuda::StepInputStaging inputs_;
  int32_t max_tokens_ = 0;
};

}  // namespace crosspoint
