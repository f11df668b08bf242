// Runs whole token sequences through a Model as prefills from position 0, several at once,
// with a private KV cache: what calibration (all samples in one forward) and evaluation
// (logits of every position) need, without the engine.
#pragma once

#include <cstdint>
#include <vector>

#include "common/status.h"
#include "model/host_forward_batch.h"
#include "model/model.h"

namespace crosspoint {

// The ForwardBatch of `sequences` as prefills from position 0, their KV blocks numbered 0, 1, ...
// in order (block_size tokens each); *total_blocks gets how many. Shared by both devices.
Status build_sequence_batch(const std::vector<std::vector<int32_t>>& sequences, bool all_positions, int32_t block_size,
                            HostForwardBatch& batch, int32_t* total_blocks);

// logits: [num_logits, vocab] f32 where the logits are, per sequence in order, those of
// every token (all_positions) or of its last token only.
// kv_dtype: the private cache's element type (kF32, or kF8E4M3 to measure an fp8 KV cache).
Status forward_sequences(const Model& model, const std::vector<std::vector<int32_t>>& sequences, bool all_positions,
                         std::vector<float>& logits, DType kv_dtype = DType::kF32);

}  // namespace crosspoint
