// What a multi-turn workload did turn by turn: how the resent history grew and what it cost in
// time to first token (with a prefix cache, later turns should cost little more than the first).
#pragma once

#include <vector>

#include "bench/request_record.h"

namespace crosspoint::bench {

struct TurnStats {
  int turn_idx = 0;              // 0 = a conversation's first turn
  int num_requests = 0;          // successful requests at this turn
  double mean_input_tokens = 0;  // history + this user turn, by the benchmark's count
  double median_ttft_ms = 0;
};

// One entry per turn index seen among successful records with turn_idx >= 0, in turn order;
// empty when the run was not multi-turn.
std::vector<TurnStats> summarize_turns(const std::vector<RequestRecord>& records);

}  // namespace crosspoint::bench
