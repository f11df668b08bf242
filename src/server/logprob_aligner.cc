#include "server/logprob_aligner.h"

namespace crosspoint {

void LogprobAligner::push_token(TokenLogprobs logprobs) { pending_.push_back({std::move(logprobs), kNoTextYet}); }

void LogprobAligner::decoded(size_t bytes) {
  if (bytes == 0) return;
  decoded_bytes_ += static_cast<int64_t>(bytes);
  // Only the newest tokens can lack an end: ends are assigned in order.
  for (auto it = pending_.rbegin(); it != pending_.rend() && it->text_end == kNoTextYet; ++it) {
    it->text_end = decoded_bytes_;
  }
}

std::vector<TokenLogprobs> LogprobAligner::emitted(size_t bytes) {
  emitted_bytes_ += static_cast<int64_t>(bytes);
  std::vector<TokenLogprobs> out;
  while (!pending_.empty() && pending_.front().text_end != kNoTextYet && pending_.front().text_end <= emitted_bytes_) {
    out.push_back(std::move(pending_.front().logprobs));
    pending_.pop_front();
  }
  return out;
}

std::vector<TokenLogprobs> LogprobAligner::flush() {
  std::vector<TokenLogprobs> out;
  for (Pending& p : pending_) out.push_back(std::move(p.logprobs));
  pending_.clear();
  return out;
}

}  // namespace crosspoint
