#include "common/thread_pool.h"

#include <algorithm>
#include <cstdlib>
#include <memory>

#include "common/status.h"

namespace crosspoint {

ThreadPool::ThreadPool(int num_threads) : num_threads_(std::max(1, num_threads)) {
  for (int i = 1; i < num_threads_; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    generation_.fetch_add(1);
  }
  wake_.notify_all();
  for (auto& worker : workers_) worker.join();
}

void ThreadPool::run_chunk(int thread_idx) {
  if (thread_idx >= job_num_chunks_) return;
  const size_t chunk = (job_n_ + job_num_chunks_ - 1) / job_num_chunks_;
  const size_t begin = static_cast<size_t>(thread_idx) * chunk;
  const size_t end = std::min(job_n_, begin + chunk);
  if (begin < end) (*job_)(begin, end);
}

void ThreadPool::worker_loop(int worker_idx) {
  uint64_t seen = 0;
  while (true) {
    // Spin for a short while: the next parallel_for usually comes within microseconds.
    uint64_t current = generation_.load(std::memory_order_acquire);
    for (int spin = 0; current == seen && spin < 20000; ++spin) {
      std::this_thread::yield();
      current = generation_.load(std::memory_order_acquire);
    }
    if (current == seen) {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return generation_.load() != seen || stopping_; });
      current = generation_.load();
    }
    if (stopping_) return;
    seen = current;
    run_chunk(worker_idx);
    pending_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

void ThreadPool::parallel_for(size_t n, const std::function<void(size_t, size_t)>& fn, size_t min_chunk) {
  if (n == 0) return;
  const size_t max_chunks = std::max<size_t>(1, n / std::max<size_t>(1, min_chunk));
  const int num_chunks = static_cast<int>(std::min<size_t>(num_threads_, max_chunks));
  if (num_chunks <= 1) {
    fn(0, n);
    return;
  }
  job_ = &fn;
  job_n_ = n;
  job_num_chunks_ = num_chunks;
  pending_.store(num_threads_ - 1, std::memory_order_release);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    generation_.fetch_add(1, std::memory_order_acq_rel);
  }
  wake_.notify_all();
  run_chunk(0);
  while (pending_.load(std::memory_order_acquire) != 0) std::this_thread::yield();
  job_ = nullptr;
}

int default_num_threads() {
  if (const char* env = std::getenv("CROSSPOINT_NUM_THREADS")) {
    int n = std::atoi(env);
    if (n > 0) return n;
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

namespace {
int& requested_threads() {
  static int n = 0;
  return n;
}
}  // namespace

void set_global_num_threads(int num_threads) { requested_threads() = num_threads; }

namespace {
thread_local ThreadPool* scoped_pool = nullptr;
}  // namespace

ThreadPool& global_thread_pool() {
  if (scoped_pool != nullptr) return *scoped_pool;
  static ThreadPool pool(requested_threads() > 0 ? requested_threads() : default_num_threads());
  return pool;
}

ThreadPoolScope::ThreadPoolScope(ThreadPool& pool) : previous_(scoped_pool) { scoped_pool = &pool; }

ThreadPoolScope::~ThreadPoolScope() { scoped_pool = previous_; }

}  // namespace crosspoint
