// vm/cpu/thread_pool.cc — see thread_pool.h. Chunks are claimed with one
// atomic fetch_add so load imbalance between chunks evens out without any
// per-call allocation.
#include "vm/cpu/thread_pool.h"

#include <algorithm>
#include <system_error>

namespace keel::vm_internal {
namespace {
// True on a thread currently executing a parallel body (worker or caller):
// a nested ParallelFor then runs inline.
thread_local bool t_in_parallel_body = false;
}  // namespace

ThreadPool::ThreadPool(int num_threads) {
  if (num_threads <= 0) num_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  workers_.reserve(static_cast<size_t>(num_threads - 1));
  for (int i = 1; i < num_threads; ++i) {
    try {
      workers_.emplace_back([this] { WorkerLoop(); });
    } catch (const std::system_error&) {
      break;  // fewer threads than asked: still correct
    }
  }
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::RunChunks() {
  const bool was_in = t_in_parallel_body;
  t_in_parallel_body = true;
  for (;;) {
    const int64_t begin = next_.fetch_add(chunk_, std::memory_order_relaxed);
    if (begin >= n_) break;
    body_(closure_, begin, std::min(n_, begin + chunk_));
  }
  t_in_parallel_body = was_in;
}

void ThreadPool::WorkerLoop() {
  uint64_t seen = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
    }
    RunChunks();
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (--busy_ == 0) done_.notify_one();
    }
  }
}

void ThreadPool::ParallelFor(int64_t n, keel_parallel_body_fn body, void* closure) {
  if (n <= 0) return;
  if (workers_.empty() || n == 1 || t_in_parallel_body) {
    body(closure, 0, n);
    return;
  }
  const int64_t threads = num_threads();
  // About 4 chunks per thread balances uneven chunks without much contention.
  const int64_t chunks = std::min<int64_t>(n, threads * 4);
  {
    std::lock_guard<std::mutex> lock(mu_);
    body_ = body;
    closure_ = closure;
    n_ = n;
    chunk_ = (n + chunks - 1) / chunks;
    next_.store(0, std::memory_order_relaxed);
    busy_ = static_cast<int>(workers_.size());
    ++generation_;
  }
  wake_.notify_all();
  RunChunks();
  std::unique_lock<std::mutex> lock(mu_);
  done_.wait(lock, [&] { return busy_ == 0; });
}

void ThreadPool::ParallelForThunk(void* pool, int64_t n, keel_parallel_body_fn body, void* closure) {
  static_cast<ThreadPool*>(pool)->ParallelFor(n, body, closure);
}

}  // namespace keel::vm_internal
