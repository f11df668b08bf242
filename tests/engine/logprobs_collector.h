// Collects one request's tokens and logprobs from its engine updates, for the logprobs tests.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <vector>

#include "engine/engine_request.h"

namespace crosspoint::testing {

class LogprobsCollector {
 public:
  OutputSink sink() {
    return [this](const RequestOutput& out) {
      std::lock_guard<std::mutex> lock(mutex_);
      tokens_.insert(tokens_.end(), out.new_token_ids.begin(), out.new_token_ids.end());
      logprobs_.insert(logprobs_.end(), out.new_logprobs.begin(), out.new_logprobs.end());
      if (!out.prompt_logprobs.empty()) ++num_prompt_logprob_updates_;
      prompt_logprobs_.insert(prompt_logprobs_.end(), out.prompt_logprobs.begin(), out.prompt_logprobs.end());
      if (!out.new_logprobs.empty() && out.new_logprobs.size() != out.new_token_ids.size()) misaligned_ = true;
      if (out.finished) {
        finished_ = true;
        done_.notify_all();
      }
    };
  }
  bool wait(double timeout_s = 60) {
    std::unique_lock<std::mutex> lock(mutex_);
    return done_.wait_for(lock, std::chrono::duration<double>(timeout_s), [&] { return finished_; });
  }
  // Read after wait() returned true.
  const std::vector<int32_t>& tokens() const { return tokens_; }
  const std::vector<TokenLogprobs>& logprobs() const { return logprobs_; }
  const std::vector<TokenLogprobs>& prompt_logprobs() const { return prompt_logprobs_; }
  // Updates that carried prompt logprobs (one at most: the first).
  int num_prompt_logprob_updates() const { return num_prompt_logprob_updates_; }
  // An update whose logprobs did not match its tokens one for one.
  bool misaligned() const { return misaligned_; }

 private:
  std::mutex mutex_;
  std::condition_variable done_;
  std::vector<int32_t> tokens_;
  std::vector<TokenLogprobs> logprobs_;
  std::vector<TokenLogprobs> prompt_logprobs_;
  int num_prompt_logprob_updates_ = 0;
  bool misaligned_ = false;
  bool finished_ = false;
};

}  // namespace crosspoint::testing
