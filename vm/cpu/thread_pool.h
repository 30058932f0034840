// vm/cpu/thread_pool.h — the fixed pool of worker threads behind
// keel_cpu_kernel_ctx.parallel_for.
//
// Threads are created once (with the VM). ParallelFor gives each thread one
// contiguous range of [0, n) (thread 0 = the caller), so that from one run to
// the next each thread gets the same part of the same loop and finds its data in
// its own core's cache. A thread runs its range in a few pieces, claimed from
// the range's own cursor; a thread whose range is done claims the remaining
// pieces of the others' ranges, so a thread that is slower (another process
// on its core, a descheduled worker, a costlier part of the loop) hands its
// tail over instead of holding the loop up. A call allocates nothing; with one
// thread (or n == 1) it runs the body inline.
//
// Waiting: a model runs dozens of short parallel loops back to back, and
// waking a thread blocked in the kernel costs tens of microseconds. So workers
// first spin (pause loop, yielding the core between polls so that a spinner
// does not hold it from the thread it waits for when the machine has more
// runnable threads than cores) for about kSpinMicros on the loop generation
// before blocking on a condition variable, and the caller spins the same way
// for the pieces to complete; blocking is only the fallback (the mutex then
// rules out lost wake-ups). Between runs the workers are asleep after the spin window.
// The caller waits for the pieces, not for the workers: a worker that is
// descheduled (a busy machine) and claimed nothing does not delay the loop.
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
#include <memory>
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
  // A cursor = (generation tag << kPieceBits) | (front << kPieceBits / 2) | back:
  // the range's pieces [front, back) are unclaimed.
  static constexpr int kPieceBits = 16;
  static constexpr uint64_t kPieceMask = (uint64_t{1} << kPieceBits / 2) - 1;
  // Pieces per thread range (at most kPieceMask): enough that a slow thread's
  // tail can be taken over in small parts, few enough that claiming costs
  // nothing measurable.
  static constexpr int64_t kPiecesPerRange = 8;
  // Indices per piece of a range of `len`.
  static int64_t PieceSize(int64_t len);

  // A loop's parameters. Two slots alternate by generation: a thread that
  // reads a slot and then claims a piece with a compare-exchange on a cursor
  // (which carries the generation tag) can only succeed while that slot is
  // unchanged, since rewriting it needs a newer generation published first.
  // Atomics (relaxed) so that a stale reader is not a data race.
  struct Job {
    std::atomic<keel_parallel_body_fn> body{nullptr};
    std::atomic<void*> closure{nullptr};
    std::atomic<int64_t> n{0};
  };
  // One thread range's claim cursor, on its own cache line (its owner claims
  // from it without sharing the line until another thread takes over).
  struct alignas(64) Cursor {
    std::atomic<uint64_t> next{0};
  };

  void WorkerLoop(int id);
  // Thread `id`'s part of generation `tag`: its own range, then the others'.
  void RunPieces(uint64_t tag, int id);
  // Claims and runs pieces of range `r` of generation `tag` until none is
  // left: the owner (thread r) from the front, another thread from the back,
  // so that the owner keeps its pieces in order and a thread that takes over
  // gets the ones the owner would have reached last.
  void RunRange(uint64_t tag, const Job& job, int64_t r, bool owner);

  std::vector<std::thread> workers_;
  std::unique_ptr<Cursor[]> cursors_;  // one per thread range (num_threads())
  std::mutex mu_;
  std::condition_variable wake_;  // sleeping workers wait for a new generation
  std::condition_variable done_;  // a sleeping caller waits for every index to complete
  Job jobs_[2];
  std::atomic<uint64_t> generation_{0};  // published (release) to start a loop
  std::atomic<int64_t> completed_{0};    // indices of the current loop that have run
  std::atomic<bool> stop_{false};
  uint64_t tag_ = 0;             // the caller's last generation
  int sleepers_ = 0;             // workers blocked on wake_; guarded by mu_
  bool caller_waiting_ = false;  // the caller is blocked on done_; guarded by mu_
};

}  // namespace keel::vm_internal
