// vm/cpu/thread_pool.h — the fixed pool of worker threads behind
// keel_cpu_kernel_ctx.parallel_for.
//
// Threads are created once (with the VM) and sleep on a condition variable
// between loops. ParallelFor splits [0, n) into chunks that the caller and the
// workers claim with one atomic counter, so a call allocates nothing and costs
// one wake-up; with one thread (or n small) it runs the body inline.
//
// Thread-safety: ParallelFor is called by one thread at a time (the thread
// running the owning VM). A ParallelFor issued from inside a body (nested) runs
// serially on the calling thread instead of deadlocking.
// Errors: none; the constructor degrades to fewer threads if a thread cannot be
// created (std::system_error is caught).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "keel/kernel_abi.h"

namespace keel::vm_internal {

class ThreadPool {
 public:
  // num_threads: total threads including the caller; 0 = hardware concurrency.
  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const { return static_cast<int>(workers_.size()) + 1; }

  void ParallelFor(int64_t n, keel_parallel_body_fn body, void* closure);

  // Adapter with the keel_cpu_kernel_ctx.parallel_for signature (pool = ThreadPool*).
  static void ParallelForThunk(void* pool, int64_t n, keel_parallel_body_fn body, void* closure);

 private:
  void WorkerLoop();
  void RunChunks();

  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable wake_;  // workers wait for a new generation
  std::condition_variable done_;  // the caller waits for busy_ == 0
  uint64_t generation_ = 0;       // guarded by mu_
  int busy_ = 0;                  // workers still in the current loop; guarded by mu_
  bool stop_ = false;             // guarded by mu_

  // The current loop; written by the caller before publishing a generation.
  keel_parallel_body_fn body_ = nullptr;
  void* closure_ = nullptr;
  int64_t n_ = 0;
  int64_t chunk_ = 1;
  std::atomic<int64_t> next_{0};
};

}  // namespace keel::vm_internal
