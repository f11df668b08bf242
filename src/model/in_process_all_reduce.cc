#include "model/in_process_all_reduce.h"

#include <algorithm>

namespace crosspoint {

InProcessAllReduce::InProcessAllReduce(int32_t world_size)
    : world_size_(world_size), barrier_(std::make_unique<std::barrier<>>(world_size)), buffers_(world_size) {}

void InProcessAllReduce::sum(int32_t rank, float* data, int64_t n) {
  buffers_[rank] = data;
  // Rank 0 sizes the shared result between the first two barriers; all write into it after.
  barrier_->arrive_and_wait();  // every buffer posted
  if (!someone_left_.load()) {
    if (rank == 0 && static_cast<int64_t>(result_.size()) < n) result_.resize(n);
  }
  barrier_->arrive_and_wait();  // result sized
  const int64_t chunk = (n + world_size_ - 1) / world_size_;
  const int64_t begin = std::min<int64_t>(n, rank * chunk), end = std::min<int64_t>(n, begin + chunk);
  if (!someone_left_.load()) {
    for (int64_t i = begin; i < end; ++i) {
      float total = buffers_[0][i];
      for (int32_t r = 1; r < world_size_; ++r) total += buffers_[r][i];
      result_[i] = total;
    }
  }
  barrier_->arrive_and_wait();  // every chunk summed
  if (!someone_left_.load()) std::copy_n(result_.data(), n, data);
  // The next call's first barrier keeps result_ until every rank has copied it out.
}

void InProcessAllReduce::leave(int32_t /*rank*/) {
  someone_left_.store(true);
  barrier_->arrive_and_drop();
}

void InProcessAllReduce::reset() {
  barrier_ = std::make_unique<std::barrier<>>(world_size_);
  someone_left_.store(false);
}

}  // namespace crosspoint
