#include "bench/turn_summary.h"

#include <map>

#include "bench/metrics.h"

namespace crosspoint::bench {

std::vector<TurnStats> summarize_turns(const std::vector<RequestRecord>& records) {
  std::map<int, std::vector<const RequestRecord*>> by_turn;
  for (const RequestRecord& r : records) {
    if (r.turn_idx >= 0 && r.success) by_turn[r.turn_idx].push_back(&r);
  }
  std::vector<TurnStats> out;
  for (const auto& [turn, list] : by_turn) {
    TurnStats t;
    t.turn_idx = turn;
    t.num_requests = static_cast<int>(list.size());
    std::vector<double> ttft_ms;
    double input_tokens = 0;
    for (const RequestRecord* r : list) {
      ttft_ms.push_back(r->ttft_s * 1e3);
      input_tokens += r->prompt_len;
    }
    t.mean_input_tokens = input_tokens / static_cast<double>(list.size());
    t.median_ttft_ms = median_of(ttft_ms);
    out.push_back(t);
  }
  return out;
}

}  // namespace crosspoint::bench
