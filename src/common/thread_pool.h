// A fixed pool of worker threads for data-parallel kernels. parallel_for splits [0, n) into
// contiguous chunks, runs them on the workers and the calling thread, and returns when all
// are done. Workers spin briefly before sleeping, because a decode step issues hundreds of
// short parallel_for calls and a sleep/wake per call would dominate.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace crosspoint {

class ThreadPool {
 public:
  // num_threads counts the caller: 1 means everything runs on the calling thread.
  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const { return num_threads_; }

  // Calls fn(begin, end) on disjoint chunks covering [0, n). Chunks are at least
  // min_chunk long so tiny loops stay on one thread. Not reentrant.
  void parallel_for(size_t n, const std::function<void(size_t, size_t)>& fn, size_t min_chunk = 1);

 private:
  void worker_loop(int worker_idx);
  void run_chunk(int thread_idx);

  int num_threads_;
  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  bool stopping_ = false;
  // The current job, valid while pending_ > 0.
  const std::function<void(size_t, size_t)>* job_ = nullptr;
  size_t job_n_ = 0;
  int job_num_chunks_ = 0;
};

// Threads to use by default: CROSSPOINT_NUM_THREADS if set, else the hardware's count.
int default_num_threads();

// The pool CPU kernels use: the calling thread's ThreadPoolScope if one is active, else the
// process-wide pool, created on first use with default_num_threads() (set_global_num_threads()
// before first use overrides it).
ThreadPool& global_thread_pool();
void set_global_num_threads(int num_threads);

// Makes `pool` the calling thread's global_thread_pool() while the scope lives, so several
// threads can run kernels at once (tensor-parallel ranks), each on its own workers.
class ThreadPoolScope {
 public:
  explicit ThreadPoolScope(ThreadPool& pool);
  ~ThreadPoolScope();
  ThreadPoolScope(const ThreadPoolScope&) = delete;
  ThreadPoolScope& operator=(const ThreadPoolScope&) = delete;

 private:
  ThreadPool* previous_;
};

}  // namespace crosspoint
