// The collective of tensor-parallel ranks that are threads of one process: each rank passes its
// buffer, and every rank gets back the sum over ranks, added in rank order for every element
// (rank 0 + rank 1 + ...), so the result is the same bits on every rank and run to run.
#pragma once

#include <atomic>
#include <barrier>
#include <cstdint>
#include <memory>
#include <vector>

namespace crosspoint {

class InProcessAllReduce {
 public:
  explicit InProcessAllReduce(int32_t world_size);

  // Every live rank calls this with the same n, in the same order of calls.
  void sum(int32_t rank, float* data, int64_t n);
  // A rank that stops early (an error) leaves, so the others do not wait for it; the sums they
  // get afterwards are not meaningful and the step's error is reported.
  void leave(int32_t rank);
  // Ready for the next step: every rank live again. Call between steps, with no rank inside.
  void reset();

 private:
  int32_t world_size_;
  std::unique_ptr<std::barrier<>> barrier_;
  std::vector<float*> buffers_;  // [world] each rank's buffer of the current call
  std::vector<float> result_;
  std::atomic<bool> someone_left_{false};
};

}  // namespace crosspoint
