// vm/cpu/thread_pool.h — the fixed pool of worker threads behind
// keel_cpu_kernel_ctx.parallel_for.
//
// Threads are created once (with the VM). ParallelFor splits [0, n) into
// chunks (about 4 per thread, at least one index each) that the caller and the
// workers claim with one atomic counter, so a call allocates nothing; with one
// thread (or n == 1) it runs the body inline.
//
// Waiting: a model runs dozens of short parallel loops back to back, and
// waking a thread blocked in the kernel costs tens of microseconds. So workers
// first spin (pause loop) for about kSpinMicros on the loop generation before
// blocking on a condition variable, and the caller spins the same way for the
// workers to finish; blocking is only the fallback (the mutex then rules out
// lost wake-ups). Between runs the workers are asleep after the spin window.
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
  static constexpr int64_t kSpinMicros = 100;

  void WorkerLoop();
  void RunChunks();

  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable wake_;  // sleeping workers wait for a new generation
  std::condition_variable done_;  // a sleeping caller waits for busy_ == 0
  std::atomic<uint64_t> generation_{0};  // bumped (release) to publish a loop
  std::atomic<int> busy_{0};             // workers still in the current loop
  std::atomic<bool> stop_{false};
  int sleepers_ = 0;             // workers blocked on wake_; guarded by mu_
  bool caller_waiting_ = false;  // the caller is blocked on done_; guarded by mu_

  // The current loop; written by the caller before publishing a generation.
  keel_parallel_body_fn body_ = nullptr;
  void* closure_ = nullptr;
  int64_t n_ = 0;
  int64_t chunk_ = 1;
  std::atomic<int64_t> next_{0};
};

}  // namespace keel::vm_internal
