// What one benchmark request records, on the client's monotonic clock. Mirrors vLLM's
// RequestFuncOutput so the metrics are computed from the same raw numbers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace crosspoint::bench {

struct RequestRecord {
  int request_idx = 0;          // position in the dataset sample
  int conversation_idx = -1;    // multi-turn: the conversation it belongs to; -1 otherwise
  int turn_idx = -1;            // multi-turn: 0 for a conversation's first turn; -1 otherwise
  int prompt_len = 0;           // tokens: the sample's count, overwritten by usage.prompt_tokens
  int expected_output_len = 0;  // tokens: max_tokens sent
  bool success = false;         // HTTP 200 and at least one token event, stream not broken
  std::string error;            // why it failed; empty on success
  int http_status = 0;          // 0 when no response came (connection refused, timeout)

  double scheduled_s = 0;     // arrival time drawn by the arrival process, s since benchmark start
  double arrival_s = 0;       // when the client actually released it (scheduled_s + loop lag)
  double start_s = 0;         // just before the POST was handed to the HTTP client, same origin
  double ttft_s = 0;          // first token event - start_s
  std::vector<double> itl_s;  // gaps between consecutive token events, s
  double latency_s = 0;       // E2EL: last token event - start_s

  int usage_completion_tokens = 0;  // 0 when the server sent no usage chunk
  int output_len = 0;               // tokens used by the metrics (usage, else tokenizer, else 1)
  std::string output_len_source;    // "usage", "tokenizer" or "none"
  std::string generated_text;       // concatenated text of the token events

  double queue_time_s() const { return start_s - arrival_s; }
};

}  // namespace crosspoint::bench
