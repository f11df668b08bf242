// Finds stop strings in generated text as it streams. Text that might be the start of a
// stop string is held back until the next piece decides it, so a stop string split across
// tokens is still found, and no byte of it (or after it) is ever emitted.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace crosspoint {

class StopStringMatcher {
 public:
  explicit StopStringMatcher(std::vector<std::string> stop_strings, bool include_stop_in_output = false);

  struct Piece {
    std::string text;          // safe to emit now
    bool stopped = false;      // a stop string was found: emit text, then end the request
    std::string matched_stop;  // which one
  };
  // Adds newly decoded text (complete UTF-8). After a stop, further calls return nothing.
  Piece push(std::string_view text);
  // The held-back tail at the end of generation (no stop string in it).
  std::string flush();
  bool stopped() const { return stopped_; }

 private:
  std::vector<std::string> stop_strings_;
  bool include_stop_in_output_;
  std::string pending_;  // text not yet emitted: a possible start of a stop string
  bool stopped_ = false;
};

}  // namespace crosspoint
