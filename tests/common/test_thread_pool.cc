#include <gtest/gtest.h>

#include <atomic>
#include <vector>

#include "common/thread_pool.h"

namespace crosspoint {
namespace {

TEST(ThreadPool, CoversEveryIndexExactlyOnce) {
  for (int threads : {1, 2, 3, 7}) {
    ThreadPool pool(threads);
    for (size_t n : {0u, 1u, 2u, 5u, 97u, 1000u}) {
      std::vector<std::atomic<int>> hits(n);
      pool.parallel_for(n, [&](size_t begin, size_t end) {
        for (size_t i = begin; i < end; ++i) hits[i].fetch_add(1);
      });
      for (size_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "threads " << threads << " n " << n;
    }
  }
}

TEST(ThreadPool, ManyShortCallsInARow) {
  ThreadPool pool(4);
  std::atomic<long> sum{0};
  for (int call = 0; call < 2000; ++call) {
    pool.parallel_for(8, [&](size_t begin, size_t end) { sum.fetch_add(static_cast<long>(end - begin)); });
  }
  EXPECT_EQ(sum.load(), 2000 * 8);
}

TEST(ThreadPool, MinChunkKeepsSmallLoopsOnOneThread) {
  ThreadPool pool(4);
  std::atomic<int> calls{0};
  pool.parallel_for(10, [&](size_t, size_t) { calls.fetch_add(1); }, 64);
  EXPECT_EQ(calls.load(), 1);
}

}  // namespace
}  // namespace crosspoint
