#include "server/stop_string_matcher.h"

#include <algorithm>

namespace crosspoint {

StopStringMatcher::StopStringMatcher(std::vector<std::string> stop_strings, bool include_stop_in_output)
    : include_stop_in_output_(include_stop_in_output) {
  for (auto& s : stop_strings) {
    if (!s.empty()) stop_strings_.push_back(std::move(s));
  }
}

StopStringMatcher::Piece StopStringMatcher::push(std::string_view text) {
  Piece piece;
  if (stopped_) return piece;
  pending_.append(text);
  // Earliest match of any stop string; on a tie at one position, the longest.
  size_t best_pos = std::string::npos;
  const std::string* best = nullptr;
  for (const auto& stop : stop_strings_) {
    const size_t pos = pending_.find(stop);
    if (pos != std::string::npos && (pos < best_pos || (pos == best_pos && stop.size() > best->size()))) {
      best_pos = pos;
      best = &stop;
    }
  }
  if (best != nullptr) {
    stopped_ = true;
    piece.stopped = true;
    piece.matched_stop = *best;
    piece.text = pending_.substr(0, include_stop_in_output_ ? best_pos + best->size() : best_pos);
    pending_.clear();
    return piece;
  }
  // Hold back the longest tail of pending_ that is a proper prefix of some stop string.
  size_t hold = 0;
  for (const auto& stop : stop_strings_) {
    const size_t max_len = std::min(stop.size() - 1, pending_.size());
    for (size_t len = max_len; len > hold; --len) {
      if (pending_.compare(pending_.size() - len, len, stop, 0, len) == 0) {
        hold = len;
        break;
      }
    }
  }
  piece.text = pending_.substr(0, pending_.size() - hold);
  pending_.erase(0, pending_.size() - hold);
  return piece;
}

std::string StopStringMatcher::flush() {
  if (stopped_) return {};
  std::string out;
  out.swap(pending_);
  return out;
}

}  // namespace crosspoint
