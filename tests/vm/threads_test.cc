// tests/vm/threads_test.cc — one Executable shared by many VMs on many threads
// gives the same results as one VM alone; the thread pool covers every index
// exactly once (also nested).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "keel/vm.h"
#include "tests/vm/test_programs.h"
#include "vm/cpu/thread_pool.h"

namespace keel {
namespace {

TEST(ThreadPoolTest, EveryIndexExactlyOnce) {
  for (int threads : {1, 2, 5}) {
    vm_internal::ThreadPool pool(threads);
    EXPECT_EQ(pool.num_threads(), threads);
    for (int64_t n : {0, 1, 7, 1000, 4099}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      auto body = [](void* closure, int64_t b, int64_t e) {
        auto* h = static_cast<std::vector<std::atomic<int>>*>(closure);
        for (int64_t i = b; i < e; ++i) (*h)[static_cast<size_t>(i)]++;
      };
      pool.ParallelFor(n, body, &hits);
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[static_cast<size_t>(i)].load(), 1) << i;
    }
  }
}

// A thread whose range is done takes over the rest of another's: index 0
// blocks until the last index of its range has run (2 threads: ranges [0, 8)
// and [8, 16), run in pieces), which only the other thread can do while the
// one holding index 0 waits. The wait gives up after 10 s so that a pool
// without take-over (one chunk per range) fails instead of hanging.
struct TakeOverClosure {
  std::atomic<int> hits[16] = {};
  std::atomic<bool> gave_up{false};
};

TEST(ThreadPoolTest, IdleThreadTakesOverAnotherRange) {
  vm_internal::ThreadPool pool(2);
  ASSERT_EQ(pool.num_threads(), 2);
  TakeOverClosure c;
  pool.ParallelFor(
      16,
      [](void* cl, int64_t b, int64_t e) {
        auto* c = static_cast<TakeOverClosure*>(cl);
        for (int64_t i = b; i < e; ++i) {
          if (i == 0) {
            const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
            while (c->hits[7].load() == 0) {
              if (std::chrono::steady_clock::now() > deadline) {
                c->gave_up = true;
                break;
              }
              std::this_thread::yield();
            }
          }
          c->hits[i]++;
        }
      },
      &c);
  EXPECT_FALSE(c.gave_up.load());
  for (int i = 0; i < 16; ++i) EXPECT_EQ(c.hits[i].load(), 1) << i;
}

struct NestedClosure {
  vm_internal::ThreadPool* pool;
  std::atomic<int64_t> total{0};
};

TEST(ThreadPoolTest, NestedParallelForRunsInline) {
  vm_internal::ThreadPool pool(4);
  NestedClosure c;
  c.pool = &pool;
  pool.ParallelFor(
      16,
      [](void* cl, int64_t b, int64_t e) {
        auto* c = static_cast<NestedClosure*>(cl);
        for (int64_t i = b; i < e; ++i) {
          c->pool->ParallelFor(
              10, [](void* t, int64_t b2, int64_t e2) { static_cast<NestedClosure*>(t)->total += e2 - b2; }, c);
        }
      },
      &c);
  EXPECT_EQ(c.total.load(), 160);
}

TEST(ThreadsTest, ManyVmsOnOneExecutable) {
  LoadOptions o;
  o.library_path = KEEL_TEST_KERNELS;
  auto exe = Executable::LoadMemory(*vmtest::FullProgram(vmtest::Plan::kStatic), o);
  ASSERT_TRUE(exe.ok()) << exe.status().ToString();
  constexpr int kThreads = 8, kRuns = 40;
  std::vector<int> mismatches(kThreads, 0), failures(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      VmOptions vo;
      vo.num_threads = 2;
      auto vm = VirtualMachine::Create(*exe, vo);
      if (!vm.ok()) {
        failures[t]++;
        return;
      }
      for (int r = 0; r < kRuns; ++r) {
        const auto in = vmtest::MakeFullInputs(t * 1000 + r);
        const int64_t xs[] = {2, 3}, ys[] = {4}, zs[] = {1024};
        if (!(*vm)->SetInput(0, in.x.data(), 24, xs, DataType::kF32).ok() ||
            !(*vm)->SetInput(1, in.y.data(), 16, ys, DataType::kF32).ok() ||
            !(*vm)->SetInput(2, in.z.data(), 4096, zs, DataType::kF32).ok() || !(*vm)->Run().ok()) {
          failures[t]++;
          continue;
        }
        const auto ref = vmtest::ReferenceFull(in);
        const std::vector<float>* want[] = {&ref.relu, &ref.matmul, &ref.scaled};
        for (size_t k = 0; k < 3; ++k) {
          auto v = (*vm)->GetOutput(k);
          const float* p = static_cast<const float*>(v->data);
          if (std::vector<float>(p, p + want[k]->size()) != *want[k]) mismatches[t]++;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(failures[t], 0) << "thread " << t;
    EXPECT_EQ(mismatches[t], 0) << "thread " << t;
  }
}

}  // namespace
}  // namespace keel
