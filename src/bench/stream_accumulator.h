// Turns the SSE payloads of one streamed completion into a RequestRecord with vLLM's
// rules: every JSON message with a non-empty `choices` list is a token event (first one
// sets TTFT, each later one appends an ITL gap, the last one sets E2EL); a message with a
// `usage` object gives the server's token counts; "[DONE]" ends the stream. An `error`
// object or a payload that is not JSON makes the request fail.
#pragma once

#include <string>

#include "bench/request_record.h"
#include "common/status.h"

namespace crosspoint::bench {

class StreamAccumulator {
 public:
  explicit StreamAccumulator(RequestRecord& record) : record_(record) {}

  // One payload received at time_s (s since benchmark start; record.start_s is set).
  // Returns an error for a malformed payload or an error message from the server.
  Status on_payload(const std::string& payload, double time_s);

  bool saw_done() const { return saw_done_; }
  int num_token_events() const { return num_token_events_; }

 private:
  RequestRecord& record_;
  bool saw_done_ = false;
  int num_token_events_ = 0;
  double last_event_s_ = 0;
};

}  // namespace crosspoint::bench
