#include "common/progress_bar.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>

#include "common/clock.h"

namespace crosspoint {

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  char buffer[32];
  if (seconds < 60) {
    std::snprintf(buffer, sizeof buffer, "%.1fs", seconds);
  } else if (seconds < 3600) {
    std::snprintf(buffer, sizeof buffer, "%dm%02ds", static_cast<int>(seconds) / 60, static_cast<int>(seconds) % 60);
  } else {
    std::snprintf(buffer, sizeof buffer, "%dh%02dm", static_cast<int>(seconds) / 3600,
                  (static_cast<int>(seconds) % 3600) / 60);
  }
  return buffer;
}

ProgressBar::ProgressBar(std::string label, size_t total)
    : label_(std::move(label)), total_(total), start_s_(monotonic_seconds()), is_terminal_(isatty(2) != 0) {}

ProgressBar::~ProgressBar() { finish(); }

void ProgressBar::update(size_t done, size_t failed) {
  std::lock_guard<std::mutex> lock(mutex_);
  done_ = done;
  failed_ = failed;
  draw(false);
}

void ProgressBar::finish() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (finished_) return;
  draw(true);
  if (is_terminal_) std::fputc('\n', stderr);
  finished_ = true;
}

void ProgressBar::draw(bool force) {
  const double now = monotonic_seconds();
  const double min_interval = is_terminal_ ? 0.1 : 5.0;
  if (!force && now - last_draw_s_ < min_interval) return;
  last_draw_s_ = now;
  const double elapsed = now - start_s_;
  const double fraction = total_ > 0 ? static_cast<double>(done_) / static_cast<double>(total_) : 1.0;
  const double eta = done_ > 0 ? elapsed * (1.0 - fraction) / fraction : NAN;
  constexpr int kWidth = 30;
  const int filled = static_cast<int>(fraction * kWidth);
  char bar[kWidth + 1];
  for (int i = 0; i < kWidth; ++i) bar[i] = i < filled ? '#' : ' ';
  bar[kWidth] = '\0';
  std::fprintf(stderr, "%s%s [%s] %zu/%zu elapsed %s eta %s failed %zu%s", is_terminal_ ? "\r" : "", label_.c_str(),
               bar, done_, total_, format_duration(elapsed).c_str(), format_duration(eta).c_str(), failed_,
               is_terminal_ ? "\x1b[K" : "\n");
  std::fflush(stderr);
}

}  // namespace crosspoint
