// A progress bar on stderr: "label [#####     ] 12/40 elapsed 3.1s eta 7.2s failed 0".
// Redraws in place on a terminal; on a pipe or file it prints a plain line at most every
// few seconds so logs stay readable.
#pragma once

#include <cstddef>
#include <mutex>
#include <string>

namespace crosspoint {

class ProgressBar {
 public:
  ProgressBar(std::string label, size_t total);
  ~ProgressBar();
  // Thread-safe.
  void update(size_t done, size_t failed = 0);
  // Draws the final state and ends the line.
  void finish();

 private:
  void draw(bool force);

  std::string label_;
  size_t total_;
  size_t done_ = 0;
  size_t failed_ = 0;
  double start_s_;
  double last_draw_s_ = -1e9;
  bool is_terminal_;
  bool finished_ = false;
  std::mutex mutex_;
};

// "1h02m", "3m05s", "4.2s"
std::string format_duration(double seconds);

}  // namespace crosspoint
