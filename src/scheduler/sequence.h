// One request's token sequence as the scheduler sees it: prompt plus generated tokens, how
// many of them already sit in the KV cache, the KV blocks it owns, and its state.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "request/sampling_params.h"

namespace crosspoint {

// WAITING -> RUNNING -> FINISHED; RUNNING -> WAITING again on preemption (its KV blocks are
// freed and its tokens are recomputed when it runs again).
enum class SequenceState { kWaiting, kRunning, kFinished };

const char* sequence_state_name(SequenceState state);

struct Sequence {
  int64_t seq_id = 0;
  SequenceState state = SequenceState::kWaiting;
  // Prompt followed by every token generated so far.
  std::vector<int32_t> token_ids;
  int32_t num_prompt_tokens = 0;
  // Tokens of token_ids whose K/V are in the cache; 0 after a preemption.
  int32_t num_computed_tokens = 0;
  // Logical block i of this sequence lives in physical KV block block_table[i].
  std::vector<int32_t> block_table;
  RequestSamplingParams sampling;
  // Times this sequence was preempted (its work recomputed).
  int32_t num_preemptions = 0;
  // Prefix caching: leading blocks of block_table whose content is registered or known.
  int32_t num_hashed_blocks = 0;
  // Prefix caching: shares cached blocks only with sequences of the same salt (empty = none).
  std::string cache_salt;

  int32_t num_tokens() const { return static_cast<int32_t>(token_ids.size()); }
  int32_t num_output_tokens() const { return num_tokens() - num_prompt_tokens; }
};

}  // namespace crosspoint
