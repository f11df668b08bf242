// Runs whole token sequences through a Model as prefills from position 0, several at once,
// with a private KV cache: what calibration (all samples in one forward) and evaluation
// (logits of every position) need, without the engine.
#pragma once

#include <cstdint>
#include <vector>

#include "common/status.h"
#include "model/model.h"

namespace crosspoint {

// logits: [num_logits, vocab] f32 where the logits are, per sequence in order, those of
// every token (all_positions) or of its last token only.
Status forward_sequences(const Model& model, const std::vector<std::vector<int32_t>>& sequences, bool all_positions,
                         std::vector<float>& logits);

}  // namespace crosspoint
