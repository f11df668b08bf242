// Monotonic time for every measurement in crosspoint (never the wall clock).
#pragma once

#include <chrono>

namespace crosspoint {

using MonotonicClock = std::chrono::steady_clock;

// Seconds since an arbitrary fixed point; only differences mean anything.
inline double monotonic_seconds() {
  return std::chrono::duration<double>(MonotonicClock::now().time_since_epoch()).count();
}

class Stopwatch {
 public:
  Stopwatch() : start_(monotonic_seconds()) {}
  void reset() { start_ = monotonic_seconds(); }
  double elapsed_seconds() const { return monotonic_seconds() - start_; }
  double elapsed_ms() const { return elapsed_seconds() * 1e3; }

 private:
  double start_;
};

}  // namespace crosspoint
