// vm/cpu/thread_pool.cc — see thread_pool.h. Chunks are claimed with one
// atomic fetch_add so load imbalance between chunks evens out without any
// per-call allocation; waits spin briefly before blocking.
#include "vm/cpu/thread_pool.h"

#include <algorithm>
#include <chrono>
#include <system_error>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace keel::vm_internal {
namespace {
// True on a thread currently executing a parallel body (worker or caller):
// a nested ParallelFor then runs inline.
thread_local bool t_in_parallel_body = false;

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#endif
}

// Spins until done() or about `micros` have passed; true when done() held.
// Between polls the spinner yields its core (sched_yield): on an idle machine
// that returns at once (a syscall's cost, under a microsecond), while on a
// machine with more runnable threads than cores it lets the thread the spinner
// is waiting for (a descheduled worker holding a chunk, or the caller) run
// instead of burning the time slice. Measured on a shared 2-core machine
// (load ~5): squeezenet1_1 at 2 threads took 6.7 ms per run with pure pause
// spinning, 4.7 ms with yields (docs/MEASUREMENTS.md, "Two-thread scaling").
template <typename Done>
bool SpinUntil(Done done, int64_t micros) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::microseconds(micros);
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (done()) return true;
      CpuRelax();
    }
    if (std::chrono::steady_clock::now() >= deadline) return done();
    std::this_thread::yield();
  }
}
}  // namespace

ThreadPool::ThreadPool(int num_threads) {
  if (num_threads <= 0) num_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  workers_.reserve(static_cast<size_t>(num_threads - 1));
  for (int i = 1; i < num_threads; ++i) {
    try {
      workers_.emplace_back([this] { WorkerLoop(); });
    } catch (...) {  // std::system_error (no thread) or std::bad_alloc (no memory for one)
      break;             // fewer threads than asked: still correct
    }
  }
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_.store(true, std::memory_order_release);
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::RunChunks(uint64_t tag) {
  const bool was_in = t_in_parallel_body;
  t_in_parallel_body = true;
  const Job& job = jobs_[tag & 1];
  for (;;) {
    uint64_t cur = next_.load(std::memory_order_acquire);
    if ((cur >> kIndexBits) != tag) break;
    const int64_t n = job.n.load(std::memory_order_relaxed);
    const int64_t chunk = job.chunk.load(std::memory_order_relaxed);
    const int64_t begin = static_cast<int64_t>(cur & ((uint64_t{1} << kIndexBits) - 1));
    if (begin >= n) break;
    if (!next_.compare_exchange_weak(cur, cur + static_cast<uint64_t>(chunk), std::memory_order_acq_rel,
                                     std::memory_order_relaxed))
      continue;
    // The claim succeeded while `tag` was current, so `job` held this loop's values.
    job.body.load(std::memory_order_relaxed)(job.closure.load(std::memory_order_relaxed), begin,
                                             std::min(n, begin + chunk));
    if (completed_.fetch_add(1, std::memory_order_acq_rel) + 1 == job.chunks.load(std::memory_order_relaxed)) {
      std::lock_guard<std::mutex> lock(mu_);
      if (caller_waiting_) done_.notify_one();
    }
  }
  t_in_parallel_body = was_in;
}

void ThreadPool::WorkerLoop() {
  uint64_t seen = 0;
  for (;;) {
    auto published = [&] {
      return stop_.load(std::memory_order_acquire) || (next_.load(std::memory_order_acquire) >> kIndexBits) != seen;
    };
    if (!SpinUntil(published, kSpinMicros)) {
      std::unique_lock<std::mutex> lock(mu_);
      ++sleepers_;
      wake_.wait(lock, published);
      --sleepers_;
    }
    if (stop_.load(std::memory_order_acquire)) return;
    seen = next_.load(std::memory_order_acquire) >> kIndexBits;
    RunChunks(seen);
  }
}

void ThreadPool::ParallelFor(int64_t n, keel_parallel_body_fn body, void* closure) {
  if (n <= 0) return;
  if (workers_.empty() || n == 1 || t_in_parallel_body || n >= (int64_t{1} << (kIndexBits - 1))) {
    body(closure, 0, n);
    return;
  }
  const int64_t threads = num_threads();
  // One contiguous chunk per thread (rounded down, so a remainder is one more
  // small chunk that whoever finishes first takes). The caller claims first, so
  // from one run to the next each thread mostly gets the same range of the
  // same loop and finds its part of the data in its own core's cache; with
  // about 4 smaller chunks per thread (claimed in a different order each run)
  // the lines moved between the cores' caches. The regions are balanced
  // (docs/MEASUREMENTS.md, "Two-thread scaling"), so little balancing is lost:
  // at 2 threads on a quiet machine, new / old wall time tiny_bert 0.92,
  // mobilenet_v2 0.97, squeezenet1_1 0.98, resnet18 1.02, bert_base 110 -> 104
  // ms, ResNet-50 and ConvNeXt-T unchanged ("Chunks per thread").
  const int64_t chunk = std::max<int64_t>(1, n / threads);
  const int64_t chunks = (n + chunk - 1) / chunk;
  tag_ = (tag_ + 1) & ((uint64_t{1} << (64 - kIndexBits)) - 1);
  if (tag_ == 0) tag_ = 1;  // 0 is the workers' initial "seen"
  Job& job = jobs_[tag_ & 1];
  job.body.store(body, std::memory_order_relaxed);
  job.closure.store(closure, std::memory_order_relaxed);
  job.n.store(n, std::memory_order_relaxed);
  job.chunk.store(chunk, std::memory_order_relaxed);
  job.chunks.store(chunks, std::memory_order_relaxed);
  completed_.store(0, std::memory_order_relaxed);
  next_.store(tag_ << kIndexBits, std::memory_order_release);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (sleepers_ > 0) wake_.notify_all();
  }
  RunChunks(tag_);
  auto finished = [&] { return completed_.load(std::memory_order_acquire) == chunks; };
  if (SpinUntil(finished, kSpinMicros)) return;
  std::unique_lock<std::mutex> lock(mu_);
  caller_waiting_ = true;
  done_.wait(lock, finished);
  caller_waiting_ = false;
}

void ThreadPool::ParallelForThunk(void* pool, int64_t n, keel_parallel_body_fn body, void* closure) {
  static_cast<ThreadPool*>(pool)->ParallelFor(n, body, closure);
}

}  // namespace keel::vm_internal
