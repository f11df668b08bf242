// Splits a Server-Sent Events byte stream into the payloads of its messages, as vLLM's
// client does: messages end at a blank line ("\n\n", also "\r\n\r\n"), comment messages
// (starting with ':') are skipped and the "data:" prefix is stripped. Bytes may arrive in
// any fragmentation.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace crosspoint::bench {

class SseParser {
 public:
  // Appends bytes; returns the data payloads of every message completed by them.
  std::vector<std::string> feed(std::string_view bytes);
  // Bytes of an unfinished message (a stream cut mid-message leaves them here).
  const std::string& pending() const { return buffer_; }

 private:
  std::string buffer_;
};

}  // namespace crosspoint::bench
