// The integer inputs of each step on their way to the GPU: a pinned host buffer that
// pack_step_inputs (model/step_inputs.h) fills, and its device copy, one fixed layout sized by a
// capacity, so every array keeps its device address from step to step (captured CUDA graphs
// read it there). The engine's runner owns one (runner/cuda/); so do eval, the benchmarks and
// tests that drive a CudaModel themselves; the model's profile step makes a temporary one.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "common/status.h"
#include "model/cuda/cuda_kv_cache.h"
#include "model/cuda/device_buffer.h"
#include "model/forward_batch.h"
#include "model/step_inputs.h"

namespace crosspoint::cuda {

// ForwardBatch on the device: pointers into the packed step-input buffer, plus the host
// integers every launch is sized by (for a captured graph, the bucket's bounds).
struct CudaForwardBatch {
  const int32_t* token_ids = nullptr;         // [num_tokens]
  const int32_t* positions = nullptr;         // [num_tokens]
  const int32_t* slot_mapping = nullptr;      // [num_tokens], -1 = K/V not stored
  const int32_t* seq_token_start = nullptr;   // [num_seqs + 1]
  const int32_t* seq_context_len = nullptr;   // [num_seqs]
  const int32_t* logits_token_idx = nullptr;  // [num_logits]
  const int32_t* block_tables = nullptr;      // [num_seqs, block_table_stride]
  PackedStepShape shape;
};

class StepInputStaging {
 public:
  StepInputStaging() = default;  // empty
  // Buffers for steps up to `capacity`, token ids checked against vocab_size.
  static Result<StepInputStaging> allocate(const StepInputCapacity& capacity, int32_t vocab_size);

  // Checks and packs `batch` into the pinned buffer (block ids against kv's blocks, slots in
  // its block size) and copies it to the device on `stream` (one cudaMemcpyAsync). The pinned
  // buffer is reused: the previous step's copy must be finished (runners synchronise at the
  // end of each step).
  Result<CudaForwardBatch> upload(const ForwardBatch& batch, const CudaKvCache& kv, int32_t block_table_stride,
                                  int32_t num_stored_tokens, cudaStream_t stream);
  // The device batch for a shape whose arrays are already on the device (graph replay).
  CudaForwardBatch device_batch(const PackedStepShape& shape) const;

  const StepInputLayout& layout() const { return layout_; }
  const StepInputCapacity& capacity() const { return layout_.capacity; }
  size_t device_bytes() const { return device_.bytes(); }

 private:
  StepInputLayout layout_;
  int32_t vocab_size_ = 0;
  PinnedBuffer host_;    // [layout_.total] int32
  DeviceBuffer device_;  // [layout_.total] int32
};

}  // namespace crosspoint::cuda
