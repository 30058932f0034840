// tests/vm/no_alloc_test.cc — Run on a static plan performs no heap allocation.
//
// This binary replaces operator new/delete and malloc/calloc/realloc/free (and the
// aligned variants) with counting wrappers around glibc's __libc_* functions, so
// any allocation made anywhere in the process while counting is on is seen —
// including ones inside the thread pool's workers.
#include <gtest/gtest.h>
#include <malloc.h>

#include <atomic>
#include <cstdlib>
#include <new>

#include "keel/vm.h"
#include "tests/vm/test_programs.h"

extern "C" {
void* __libc_malloc(size_t);
void* __libc_calloc(size_t, size_t);
void* __libc_realloc(void*, size_t);
void __libc_free(void*);
void* __libc_memalign(size_t, size_t);
}

namespace {
std::atomic<bool> g_counting{false};
std::atomic<long> g_allocations{0};
inline void Count() {
  if (g_counting.load(std::memory_order_relaxed)) g_allocations.fetch_add(1, std::memory_order_relaxed);
}
}  // namespace

extern "C" {
void* malloc(size_t n) {
  Count();
  return __libc_malloc(n);
}
void* calloc(size_t a, size_t b) {
  Count();
  return __libc_calloc(a, b);
}
void* realloc(void* p, size_t n) {
  Count();
  return __libc_realloc(p, n);
}
void free(void* p) { __libc_free(p); }
void* aligned_alloc(size_t alignment, size_t n) {
  Count();
  return __libc_memalign(alignment, n);
}
void* memalign(size_t alignment, size_t n) {
  Count();
  return __libc_memalign(alignment, n);
}
int posix_memalign(void** out, size_t alignment, size_t n) {
  Count();
  void* p = __libc_memalign(alignment, n);
  if (p == nullptr) return 12;  // ENOMEM
  *out = p;
  return 0;
}
}

void* operator new(size_t n) {
  Count();
  if (void* p = __libc_malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void* operator new[](size_t n) { return operator new(n); }
void* operator new(size_t n, std::align_val_t a) {
  Count();
  if (void* p = __libc_memalign(static_cast<size_t>(a), n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void* operator new[](size_t n, std::align_val_t a) { return operator new(n, a); }
void operator delete(void* p) noexcept { __libc_free(p); }
void operator delete[](void* p) noexcept { __libc_free(p); }
void operator delete(void* p, size_t) noexcept { __libc_free(p); }
void operator delete[](void* p, size_t) noexcept { __libc_free(p); }
void operator delete(void* p, std::align_val_t) noexcept { __libc_free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { __libc_free(p); }
void operator delete(void* p, size_t, std::align_val_t) noexcept { __libc_free(p); }
void operator delete[](void* p, size_t, std::align_val_t) noexcept { __libc_free(p); }

namespace keel {
namespace {

std::unique_ptr<VirtualMachine> MakeVm(vmtest::Plan plan, int threads) {
  LoadOptions o;
  o.library_path = KEEL_TEST_KERNELS;
  auto exe = Executable::LoadMemory(*vmtest::FullProgram(plan), o);
  EXPECT_TRUE(exe.ok()) << exe.status().ToString();
  VmOptions vo;
  vo.num_threads = threads;
  auto vm = VirtualMachine::Create(*exe, vo);
  EXPECT_TRUE(vm.ok());
  auto in = vmtest::MakeFullInputs(3);
  const int64_t xs[] = {2, 3}, ys[] = {4}, zs[] = {1024};
  EXPECT_TRUE((*vm)->SetInput("x", in.x.data(), 24, xs, DataType::kF32).ok());
  EXPECT_TRUE((*vm)->SetInput("y", in.y.data(), 16, ys, DataType::kF32).ok());
  EXPECT_TRUE((*vm)->SetInput("z", in.z.data(), 4096, zs, DataType::kF32).ok());
  return std::move(*vm);
}

long CountRunAllocations(VirtualMachine& vm) {
  EXPECT_TRUE(vm.Run().ok());  // warm-up
  g_allocations = 0;
  g_counting = true;
  Status s = Status::Ok();
  for (int i = 0; i < 10 && s.ok(); ++i) s = vm.Run();
  g_counting = false;
  EXPECT_TRUE(s.ok()) << s.ToString();
  return g_allocations.load();
}

TEST(NoAllocTest, CounterSeesAllocations) {
  // The test must be able to fail: an allocation while counting is counted.
  g_allocations = 0;
  g_counting = true;
  void* volatile p = std::malloc(32);
  auto* q = new std::vector<int>(100);
  g_counting = false;
  std::free(p);
  delete q;
  EXPECT_GE(g_allocations.load(), 3);
}

TEST(NoAllocTest, StaticPlanRunAllocatesNothing) {
  for (int threads : {1, 4}) {
    auto vm = MakeVm(vmtest::Plan::kStatic, threads);
    ASSERT_NE(vm, nullptr);
    EXPECT_EQ(CountRunAllocations(*vm), 0) << "threads=" << threads;
  }
}

TEST(NoAllocTest, DynamicPlanDoesAllocate) {
  auto vm = MakeVm(vmtest::Plan::kDynamic, 1);
  ASSERT_NE(vm, nullptr);
  EXPECT_GE(CountRunAllocations(*vm), 10 * 5);
}

}  // namespace
}  // namespace keel
