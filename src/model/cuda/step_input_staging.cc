#include "model/cuda/step_input_staging.h"

#include "kernels/cuda/cuda_status.h"

namespace crosspoint::cuda {

Result<StepInputStaging> StepInputStaging::allocate(const StepInputCapacity& capacity, int32_t vocab_size) {
  StepInputStaging s;
  s.layout_ = StepInputLayout::for_capacity(capacity);
  s.vocab_size_ = vocab_size;
  CROSSPOINT_ASSIGN_OR_RETURN(s.host_, PinnedBuffer::allocate(s.layout_.total * 4, "step inputs (host)"));
  CROSSPOINT_ASSIGN_OR_RETURN(s.device_, DeviceBuffer::allocate(s.layout_.total * 4, "step inputs"));
  return s;
}

Result<CudaForwardBatch> StepInputStaging::upload(const ForwardBatch& batch, const CudaKvCache& kv,
                                                  int32_t block_table_stride, int32_t num_stored_tokens,
                                                  cudaStream_t stream) {
  int32_t* staging = host_.as<int32_t>();
  CROSSPOINT_ASSIGN_OR_RETURN(PackedStepShape shape,
                              pack_step_inputs(batch, layout_, vocab_size_, kv.block_size(), kv.num_blocks(),
                                               block_table_stride, num_stored_tokens, staging));
  CROSSPOINT_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(device_.as(), staging, shape.num_packed_int32 * 4, cudaMemcpyHostToDevice, stream),
      "copy step inputs");
  return device_batch(shape);
}

CudaForwardBatch StepInputStaging::device_batch(const PackedStepShape& shape) const {
  const int32_t* base = device_.as<int32_t>();
  CudaForwardBatch b;
  b.token_ids = base + layout_.token_ids;
  b.positions = base + layout_.positions;
  b.slot_mapping = base + layout_.slot_mapping;
  b.seq_token_start = base + layout_.seq_token_start;
  b.seq_context_len = base + layout_.seq_context_len;
  b.logits_token_idx = base + layout_.logits_token_idx;
  b.block_tables = base + layout_.block_tables;
  b.shape = shape;
  return b;
}

}  // namespace crosspoint::cuda
