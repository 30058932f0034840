// vm/cpu/thread_pool.cc — see thread_pool.h. Pieces are claimed with one
// compare-exchange on their range's cursor, without any per-call allocation;
// waits spin briefly before blocking.
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
  // Before the workers start (they read cursors_ once a loop is published).
  cursors_ = std::make_unique<Cursor[]>(static_cast<size_t>(num_threads));
  workers_.reserve(static_cast<size_t>(num_threads - 1));
  for (int i = 1; i < num_threads; ++i) {
    try {
      workers_.emplace_back([this, i] { WorkerLoop(i); });
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

namespace {
// Range r of [0, n) split over `ranges` threads: sizes differ by at most one.
int64_t RangeBegin(int64_t n, int64_t ranges, int64_t r) { return n / ranges * r + std::min(r, n % ranges); }
}  // namespace

int64_t ThreadPool::PieceSize(int64_t len) { return std::max<int64_t>(1, (len + kPiecesPerRange - 1) / kPiecesPerRange); }

void ThreadPool::RunRange(uint64_t tag, const Job& job, int64_t r, bool owner) {
  const int64_t ranges = num_threads();
  Cursor& cursor = cursors_[static_cast<size_t>(r)];
  for (;;) {
    uint64_t cur = cursor.next.load(std::memory_order_acquire);
    if ((cur >> kPieceBits) != tag) return;
    const uint64_t front = (cur >> kPieceBits / 2) & kPieceMask, back = cur & kPieceMask;
    if (front >= back) return;
    // The owner claims its next piece, another thread the range's last one.
    const uint64_t next = owner ? cur + (uint64_t{1} << kPieceBits / 2) : cur - 1;
    if (!cursor.next.compare_exchange_weak(cur, next, std::memory_order_acq_rel, std::memory_order_relaxed)) continue;
    // The claim succeeded while `tag` was current, so `job` holds this loop's values.
    const int64_t n = job.n.load(std::memory_order_relaxed);
    const int64_t lo = RangeBegin(n, ranges, r), hi = RangeBegin(n, ranges, r + 1);
    const int64_t piece = PieceSize(hi - lo);
    const int64_t i = static_cast<int64_t>(owner ? front : back - 1);
    const int64_t begin = lo + i * piece, end = std::min(hi, begin + piece);
    job.body.load(std::memory_order_relaxed)(job.closure.load(std::memory_order_relaxed), begin, end);
    if (completed_.fetch_add(end - begin, std::memory_order_acq_rel) + (end - begin) == n) {
      std::lock_guard<std::mutex> lock(mu_);
      if (caller_waiting_) done_.notify_one();
    }
  }
}

void ThreadPool::RunPieces(uint64_t tag, int id) {
  const bool was_in = t_in_parallel_body;
  t_in_parallel_body = true;
  const Job& job = jobs_[tag & 1];
  // Own range first, then the others' in turn (a thread that finished early
  // takes over the rest of a slower one's range).
  const int ranges = num_threads();
  for (int i = 0; i < ranges; ++i) RunRange(tag, job, (id + i) % ranges, i == 0);
  t_in_parallel_body = was_in;
}

void ThreadPool::WorkerLoop(int id) {
  uint64_t seen = 0;
  for (;;) {
    auto published = [&] {
      return stop_.load(std::memory_order_acquire) || generation_.load(std::memory_order_acquire) != seen;
    };
    if (!SpinUntil(published, kSpinMicros)) {
      std::unique_lock<std::mutex> lock(mu_);
      ++sleepers_;
      wake_.wait(lock, published);
      --sleepers_;
    }
    if (stop_.load(std::memory_order_acquire)) return;
    seen = generation_.load(std::memory_order_acquire);
    RunPieces(seen, id);
  }
}

void ThreadPool::ParallelFor(int64_t n, keel_parallel_body_fn body, void* closure) {
  if (n <= 0) return;
  if (workers_.empty() || n == 1 || t_in_parallel_body) {
    body(closure, 0, n);
    return;
  }
  // One contiguous range per thread, the caller's first: from one run to the
  // next each thread mostly gets the same range of the same loop and finds its
  // part of the data in its own core's cache; with about 4 smaller chunks per
  // thread claimed from one shared counter (in a different order each run)
  // the lines moved between the cores' caches ("Chunks per thread" in
  // docs/MEASUREMENTS.md). The caller now always gets range 0 (with one shared
  // counter the spinning worker could claim the first chunk before the caller
  // did), and the pieces let a thread that finished early take over the tail
  // of a slower one: at 2 threads, new / old wall time mnasnet1_0 0.95-0.98,
  // resnet18 0.95-1.00, the other CNNs and tiny_bert 0.98-1.01 ("Two threads:
  // where the time goes, and thread ranges with take-over").
  const int ranges = num_threads();
  tag_ = (tag_ + 1) & ((uint64_t{1} << (64 - kPieceBits)) - 1);
  if (tag_ == 0) tag_ = 1;  // 0 is the workers' initial "seen"
  Job& job = jobs_[tag_ & 1];
  job.body.store(body, std::memory_order_relaxed);
  job.closure.store(closure, std::memory_order_relaxed);
  job.n.store(n, std::memory_order_relaxed);
  completed_.store(0, std::memory_order_relaxed);
  for (int r = 0; r < ranges; ++r) {
    const int64_t len = RangeBegin(n, ranges, r + 1) - RangeBegin(n, ranges, r);
    const uint64_t pieces = static_cast<uint64_t>(len == 0 ? 0 : (len + PieceSize(len) - 1) / PieceSize(len));
    cursors_[static_cast<size_t>(r)].next.store((tag_ << kPieceBits) | pieces, std::memory_order_release);
  }
  generation_.store(tag_, std::memory_order_release);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (sleepers_ > 0) wake_.notify_all();
  }
  RunPieces(tag_, 0);
  auto finished = [&] { return completed_.load(std::memory_order_acquire) == n; };
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
