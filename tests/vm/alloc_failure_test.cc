// tests/vm/alloc_failure_test.cc — every allocation of load and VM creation fails
// in turn, and each failure is a clean error with nothing leaked (issue 12).
//
// Two kinds of allocation, each made to fail at its n-th call for n = 0, 1, 2,
// ... until a whole load + create succeeds:
//   * the embedder's host allocator (keel/memory.h): the executable's copy, the
//     arenas, the input buffers (LoadOptions / VmOptions::host_allocator). The
//     test's allocator counts live blocks: after each attempt everything is
//     released and the count must be back to zero.
//   * the C++ heap: this binary replaces operator new (all forms) with one that
//     throws std::bad_alloc at its n-th call while armed; the C++ API must then
//     return kOutOfMemory (never throw) and the C API KEEL_OUT_OF_MEMORY. The
//     operator-new blocks still live after each attempt are counted too.
// Leaks of plain malloc memory are LeakSanitizer's: the same file is built with
// AddressSanitizer over the runtime's sources (keel_alloc_failure_asan_test).
//
// Also here: a caller-owned arena buffer makes VM creation call no allocator at
// all for a static plan and gives the same results; a too small or misaligned
// buffer is refused naming the sizes.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "keel/c_api.h"
#include "keel/vm.h"
#include "tests/vm/test_programs.h"

// ---- operator new that fails on demand ------------------------------------------

namespace {
std::atomic<bool> g_armed{false};
std::atomic<long> g_news{0};          // operator new calls while armed
std::atomic<long> g_fail_new_at{-1};  // armed: the call (0-based) that throws
std::atomic<long> g_live_news{0};     // blocks from operator new not yet deleted

// Header in front of every block: whether it is counted in g_live_news (blocks
// made before the counter existed are not).
constexpr size_t kHeader = 64;  // keeps every alignment up to 64

void* CountedNew(size_t n, size_t alignment) {
  if (g_armed.load(std::memory_order_relaxed)) {
    if (g_news.fetch_add(1, std::memory_order_relaxed) == g_fail_new_at.load(std::memory_order_relaxed)) {
      throw std::bad_alloc();
    }
  }
  const size_t align = alignment > kHeader ? alignment : kHeader;
  void* base = std::aligned_alloc(align, (n + align + align - 1) / align * align);
  if (base == nullptr) throw std::bad_alloc();
  g_live_news.fetch_add(1, std::memory_order_relaxed);
  auto* user = static_cast<unsigned char*>(base) + align;
  std::memcpy(user - sizeof(void*), &base, sizeof(void*));
  return user;
}
void CountedDelete(void* p) noexcept {
  if (p == nullptr) return;
  void* base = nullptr;
  std::memcpy(&base, static_cast<unsigned char*>(p) - sizeof(void*), sizeof(void*));
  g_live_news.fetch_sub(1, std::memory_order_relaxed);
  std::free(base);
}
}  // namespace

void* operator new(size_t n) { return CountedNew(n, 16); }
void* operator new[](size_t n) { return CountedNew(n, 16); }
void* operator new(size_t n, std::align_val_t a) { return CountedNew(n, static_cast<size_t>(a)); }
void* operator new[](size_t n, std::align_val_t a) { return CountedNew(n, static_cast<size_t>(a)); }
void* operator new(size_t n, const std::nothrow_t&) noexcept {
  try {
    return CountedNew(n, 16);
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](size_t n, const std::nothrow_t&) noexcept { return operator new(n, std::nothrow); }
void operator delete(void* p) noexcept { CountedDelete(p); }
void operator delete[](void* p) noexcept { CountedDelete(p); }
void operator delete(void* p, size_t) noexcept { CountedDelete(p); }
void operator delete[](void* p, size_t) noexcept { CountedDelete(p); }
void operator delete(void* p, std::align_val_t) noexcept { CountedDelete(p); }
void operator delete[](void* p, std::align_val_t) noexcept { CountedDelete(p); }
void operator delete(void* p, size_t, std::align_val_t) noexcept { CountedDelete(p); }
void operator delete[](void* p, size_t, std::align_val_t) noexcept { CountedDelete(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { CountedDelete(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { CountedDelete(p); }

namespace keel {
namespace {

// ---- the embedder's allocator -----------------------------------------------------

// Fails its `fail_at`-th allocation (0-based; -1: never); counts live blocks.
struct TestAllocator {
  long calls = 0;
  long fail_at = -1;
  long live = 0;
  long failures = 0;

  static void* Allocate(void* ctx, size_t bytes, size_t alignment) {
    auto* self = static_cast<TestAllocator*>(ctx);
    if (self->calls++ == self->fail_at) {
      ++self->failures;
      return nullptr;
    }
    void* p = std::aligned_alloc(alignment, (bytes + alignment - 1) / alignment * alignment + alignment);
    if (p != nullptr) ++self->live;
    return p;
  }
  static void Deallocate(void* ctx, void* p) {
    --static_cast<TestAllocator*>(ctx)->live;
    std::free(p);
  }
  Allocator allocator() { return Allocator{&Allocate, &Deallocate, this}; }
};

constexpr int64_t kXs[] = {2, 3}, kYs[] = {4}, kZs[] = {1024};

// Sets the full program's inputs, runs, and returns the outputs (empty on error).
vmtest::FullOutputs RunFull(VirtualMachine& vm) {
  const vmtest::FullInputs in = vmtest::MakeFullInputs(7);
  vmtest::FullOutputs out;
  if (!vm.SetInput("x", in.x.data(), 24, kXs, DataType::kF32).ok() ||
      !vm.SetInput("y", in.y.data(), 16, kYs, DataType::kF32).ok() ||
      !vm.SetInput("z", in.z.data(), 4096, kZs, DataType::kF32).ok()) {
    return out;
  }
  Status s = vm.Run();
  EXPECT_TRUE(s.ok()) << s.ToString();
  if (!s.ok()) return out;
  out.relu.resize(4);
  out.matmul.resize(4);
  out.scaled.resize(1024);
  EXPECT_TRUE(vm.CopyOutputToHost(0, out.relu.data(), 16).ok());
  EXPECT_TRUE(vm.CopyOutputToHost(1, out.matmul.data(), 16).ok());
  EXPECT_TRUE(vm.CopyOutputToHost(2, out.scaled.data(), 4096).ok());
  return out;
}

void ExpectReference(const vmtest::FullOutputs& got) {
  const vmtest::FullOutputs want = vmtest::ReferenceFull(vmtest::MakeFullInputs(7));
  EXPECT_EQ(got.relu, want.relu);
  EXPECT_EQ(got.matmul, want.matmul);
  EXPECT_EQ(got.scaled, want.scaled);
}

// One load (from memory: the copy goes through the allocator) and one VM on it.
struct Attempt {
  Status status;  // the first error, or OK
  std::shared_ptr<const Executable> exe;
  std::unique_ptr<VirtualMachine> vm;
};
struct Options {
  LoadOptions load;
  VmOptions vm;
};
Options MakeOptions(const Allocator& host) {
  Options o;
  o.load.library_path = KEEL_TEST_KERNELS;
  o.load.host_allocator = host;
  o.vm.num_threads = 1;
  o.vm.host_allocator = host;
  return o;
}
// Makes no allocation of its own beyond the API calls' (the heap test arms
// operator new around it).
Attempt LoadAndCreate(const std::vector<uint8_t>& bytes, const Options& o) {
  Attempt a;
  auto exe = Executable::LoadMemory(bytes, o.load);
  if (!exe.ok()) {
    a.status = exe.status();
    return a;
  }
  a.exe = *exe;
  auto vm = VirtualMachine::Create(a.exe, o.vm);
  if (!vm.ok()) {
    a.status = vm.status();
    return a;
  }
  a.vm = std::move(*vm);
  return a;
}

class HostAllocatorFailure : public ::testing::TestWithParam<vmtest::Plan> {};

TEST_P(HostAllocatorFailure, EveryAllocationFailsInTurnCleanly) {
  auto bytes = vmtest::FullProgram(GetParam());
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  long failure_points = 0;
  for (long n = 0;; ++n) {
    ASSERT_LT(n, 1000) << "load + create never succeeded";
    TestAllocator alloc;
    alloc.fail_at = n;
    Attempt a = LoadAndCreate(*bytes, MakeOptions(alloc.allocator()));
    if (alloc.failures == 0) {  // every allocation succeeded: the whole sequence was covered
      ASSERT_TRUE(a.status.ok()) << a.status.ToString();
      alloc.fail_at = -1;  // Run's own allocations (dynamic plan): DynamicStoragesFailInTurn
      ExpectReference(RunFull(*a.vm));
      a.vm.reset();
      a.exe.reset();
      EXPECT_EQ(alloc.live, 0);
      break;
    }
    ++failure_points;
    EXPECT_EQ(a.status.code(), StatusCode::kOutOfMemory) << "allocation " << n << ": " << a.status.ToString();
    EXPECT_NE(a.status.message().find("cannot allocate"), std::string::npos) << a.status.ToString();
    a.vm.reset();
    a.exe.reset();
    EXPECT_EQ(alloc.live, 0) << "allocation " << n << " failed: blocks leaked";
  }
  // The executable's copy, three arenas or buffers at least: the test must have failed something.
  EXPECT_GE(failure_points, 4);
  std::printf("the host allocator failed in turn at %ld calls of load + create\n", failure_points);
}

// Dynamic plans allocate during Run: each of those fails in turn too, as a clean
// kOutOfMemory from Run, and the next Run of the same VM succeeds.
TEST(HostAllocatorFailureDuringRun, DynamicStoragesFailInTurn) {
  auto bytes = vmtest::FullProgram(vmtest::Plan::kDynamic);
  ASSERT_TRUE(bytes.ok());
  TestAllocator alloc;
  Attempt a = LoadAndCreate(*bytes, MakeOptions(alloc.allocator()));
  ASSERT_TRUE(a.status.ok()) << a.status.ToString();
  const long after_create = alloc.calls;
  ExpectReference(RunFull(*a.vm));
  const long per_run = alloc.calls - after_create;
  ASSERT_GE(per_run, 2) << "the dynamic plan allocates nothing per run";
  for (long k = 0; k < per_run; ++k) {
    alloc.fail_at = alloc.calls + k;
    Status s = a.vm->Run();
    EXPECT_EQ(s.code(), StatusCode::kOutOfMemory) << "run allocation " << k << ": " << s.ToString();
    alloc.fail_at = -1;
    ExpectReference(RunFull(*a.vm));  // recovers
  }
  a.vm.reset();
  a.exe.reset();
  EXPECT_EQ(alloc.live, 0);
}

INSTANTIATE_TEST_SUITE_P(Plans, HostAllocatorFailure, ::testing::Values(vmtest::Plan::kStatic, vmtest::Plan::kDynamic),
                         [](const ::testing::TestParamInfo<vmtest::Plan>& i) {
                           return std::string(i.param == vmtest::Plan::kStatic ? "static" : "dynamic");
                         });

// ---- the C++ heap ---------------------------------------------------------------

// Arms operator new to fail at call `n` around `body`; returns how many calls were made.
template <typename F>
long WithNewFailingAt(long n, F&& body) {
  g_news = 0;
  g_fail_new_at = n;
  g_armed = true;
  body();
  g_armed = false;
  g_fail_new_at = -1;
  return g_news.load();
}

TEST(HeapFailure, TheHookCanFail) {  // the test can fail: an armed new throws
  bool threw = false;
  WithNewFailingAt(0, [&] {
    try {
      auto* p = new std::vector<int>(10);
      delete p;
    } catch (const std::bad_alloc&) {
      threw = true;
    }
  });
  EXPECT_TRUE(threw);
}

TEST(HeapFailure, CppApiLoadAndCreateReturnOutOfMemory) {
  auto bytes = vmtest::FullProgram(vmtest::Plan::kStatic);
  ASSERT_TRUE(bytes.ok());
  const Options options = MakeOptions(Allocator{});
  { Attempt warm = LoadAndCreate(*bytes, options); }  // first-use statics (dl state, locale) outside the count
  long failure_points = 0;
  for (long n = 0;; ++n) {
    ASSERT_LT(n, 20000) << "load + create never succeeded";
    const long live_before = g_live_news.load();
    Attempt a;
    bool escaped = false;
    const long calls = WithNewFailingAt(n, [&] {
      try {
        a = LoadAndCreate(*bytes, options);
      } catch (...) {
        escaped = true;
      }
    });
    ASSERT_FALSE(escaped) << "an exception crossed the C++ API at operator new call " << n;
    if (n >= calls) {  // nothing failed
      ASSERT_TRUE(a.status.ok()) << a.status.ToString();
      ExpectReference(RunFull(*a.vm));
      break;
    }
    ++failure_points;
    EXPECT_EQ(a.status.code(), StatusCode::kOutOfMemory) << "operator new call " << n << ": " << a.status.ToString();
    a = Attempt{};
    EXPECT_EQ(g_live_news.load(), live_before) << "operator new call " << n << " failed: blocks leaked";
  }
  EXPECT_GE(failure_points, 20);  // load and create make many small allocations
  std::printf("operator new failed in turn at %ld calls of load + create (C++ API)\n", failure_points);
}

TEST(HeapFailure, CApiLoadAndCreateReturnOutOfMemory) {
  auto bytes = vmtest::FullProgram(vmtest::Plan::kStatic);
  ASSERT_TRUE(bytes.ok());
  keel_load_options_t lo;
  ASSERT_EQ(keel_load_options_init(&lo), KEEL_OK);
  lo.library_path = KEEL_TEST_KERNELS;
  keel_vm_options_t vo;
  ASSERT_EQ(keel_vm_options_init(&vo), KEEL_OK);
  vo.num_threads = 1;
  // Give the thread's error message room once (it is kept between calls).
  keel_executable_t* none = nullptr;
  EXPECT_NE(keel_executable_load_file(std::string(300, 'x').c_str(), nullptr, &none), KEEL_OK);
  long failure_points = 0;
  for (long n = 0;; ++n) {
    ASSERT_LT(n, 20000) << "load + create never succeeded";
    const long live_before = g_live_news.load();
    keel_executable_t* exe = nullptr;
    keel_vm_t* vm = nullptr;
    keel_status_t st = KEEL_OK;
    const long calls = WithNewFailingAt(n, [&] {
      st = keel_executable_load_memory_with_options(bytes->data(), bytes->size(), &lo, &exe);
      if (st == KEEL_OK) st = keel_vm_create(exe, "cpu", &vo, &vm);
    });
    if (n >= calls) {
      ASSERT_EQ(st, KEEL_OK) << keel_last_error_message();
      EXPECT_EQ(keel_vm_run(vm), KEEL_FAILED_PRECONDITION);  // a working VM whose inputs are not set
      keel_vm_release(vm);
      keel_executable_release(exe);
      break;
    }
    ++failure_points;
    EXPECT_EQ(st, KEEL_OUT_OF_MEMORY) << "operator new call " << n << ": " << keel_last_error_message();
    keel_vm_release(vm);
    keel_executable_release(exe);
    EXPECT_EQ(g_live_news.load(), live_before) << "operator new call " << n << " failed: blocks leaked";
  }
  EXPECT_GE(failure_points, 20);
  std::printf("operator new failed in turn at %ld calls of load + create (C API)\n", failure_points);
}

// ---- a caller-owned arena buffer ----------------------------------------------------

TEST(ArenaBuffer, StaticPlanCreationAllocatesNoHostMemory) {
  auto bytes = vmtest::FullProgram(vmtest::Plan::kStatic);
  ASSERT_TRUE(bytes.ok());
  LoadOptions lo;
  lo.library_path = KEEL_TEST_KERNELS;
  auto exe = Executable::LoadMemory(*bytes, lo);
  ASSERT_TRUE(exe.ok()) << exe.status().ToString();
  const MemoryRequirements req = (*exe)->memory_requirements();
  // Three host arenas or inputs at least: x (24 B), y (16 B), z (4 KB), plus the plan's arena.
  EXPECT_GE(req.bytes, 24u + 16u + 4096u);
  EXPECT_GE(req.alignment, 64u);
  EXPECT_EQ(req.alignment & (req.alignment - 1), 0u);
  void* buffer = std::aligned_alloc(req.alignment, (req.bytes + req.alignment - 1) / req.alignment * req.alignment);
  ASSERT_NE(buffer, nullptr);
  std::memset(buffer, 0xab, req.bytes);  // the VM must not rely on zeroed memory
  TestAllocator alloc;  // would see any host allocation the VM makes
  VmOptions vo;
  vo.num_threads = 1;
  vo.host_allocator = alloc.allocator();
  vo.arena_buffer = buffer;
  vo.arena_buffer_size = req.bytes;
  {
    auto vm = VirtualMachine::Create(*exe, vo);
    ASSERT_TRUE(vm.ok()) << vm.status().ToString();
    EXPECT_EQ(alloc.calls, 0) << "VM creation allocated host memory despite the arena buffer";
    ExpectReference(RunFull(**vm));
    EXPECT_EQ(alloc.calls, 0) << "Run allocated host memory on a static plan";
    // The outputs live in the caller's buffer.
    auto out = (*vm)->GetOutput(0);
    ASSERT_TRUE(out.ok());
    const auto* p = static_cast<const uint8_t*>(out->data);
    EXPECT_TRUE(p >= static_cast<uint8_t*>(buffer) && p < static_cast<uint8_t*>(buffer) + req.bytes);
  }
  std::free(buffer);
}

TEST(ArenaBuffer, TooSmallOrMisalignedIsRefusedNamingTheNeed) {
  auto bytes = vmtest::FullProgram(vmtest::Plan::kStatic);
  ASSERT_TRUE(bytes.ok());
  LoadOptions lo;
  lo.library_path = KEEL_TEST_KERNELS;
  auto exe = Executable::LoadMemory(*bytes, lo);
  ASSERT_TRUE(exe.ok());
  const MemoryRequirements req = (*exe)->memory_requirements();
  std::vector<uint8_t> storage(req.bytes + 2 * req.alignment);
  uint8_t* aligned = storage.data() + (req.alignment - reinterpret_cast<uintptr_t>(storage.data()) % req.alignment);
  VmOptions vo;
  vo.arena_buffer = aligned;
  vo.arena_buffer_size = req.bytes - 1;
  auto small = VirtualMachine::Create(*exe, vo);
  ASSERT_FALSE(small.ok());
  EXPECT_EQ(small.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(small.status().message().find("needs " + std::to_string(req.bytes)), std::string::npos)
      << small.status().ToString();
  vo.arena_buffer = aligned + 8;
  vo.arena_buffer_size = req.bytes;
  auto misaligned = VirtualMachine::Create(*exe, vo);
  ASSERT_FALSE(misaligned.ok());
  EXPECT_NE(misaligned.status().message().find("not aligned to the " + std::to_string(req.alignment)),
            std::string::npos)
      << misaligned.status().ToString();
  vo.arena_buffer = nullptr;
  auto null_with_size = VirtualMachine::Create(*exe, vo);
  EXPECT_EQ(null_with_size.status().code(), StatusCode::kInvalidArgument);
}

TEST(ArenaBuffer, HalfSetAllocatorIsRefused) {
  auto bytes = vmtest::FullProgram(vmtest::Plan::kStatic);
  ASSERT_TRUE(bytes.ok());
  LoadOptions lo;
  lo.library_path = KEEL_TEST_KERNELS;
  lo.host_allocator.allocate = &TestAllocator::Allocate;  // no deallocate
  auto exe = Executable::LoadMemory(*bytes, lo);
  ASSERT_FALSE(exe.ok());
  EXPECT_EQ(exe.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(exe.status().message().find("LoadOptions::host_allocator"), std::string::npos);
}

// The C API: the requirements query and a VM on a caller-owned buffer.
TEST(ArenaBuffer, CApi) {
  auto bytes = vmtest::FullProgram(vmtest::Plan::kStatic);
  ASSERT_TRUE(bytes.ok());
  keel_executable_t* exe = nullptr;
  ASSERT_EQ(keel_executable_load_memory(bytes->data(), bytes->size(), KEEL_TEST_KERNELS, 0, &exe), KEEL_OK)
      << keel_last_error_message();
  keel_memory_requirements_t req{};
  ASSERT_EQ(keel_executable_memory_requirements(exe, &req), KEEL_OK);
  EXPECT_GE(req.bytes, 24u + 16u + 4096u);
  void* buffer = std::aligned_alloc(req.alignment, (req.bytes + req.alignment - 1) / req.alignment * req.alignment);
  keel_vm_options_t vo;
  ASSERT_EQ(keel_vm_options_init(&vo), KEEL_OK);
  vo.num_threads = 1;
  vo.arena_buffer = buffer;
  vo.arena_buffer_size = req.bytes;
  keel_vm_t* vm = nullptr;
  ASSERT_EQ(keel_vm_create(exe, "cpu", &vo, &vm), KEEL_OK) << keel_last_error_message();
  const vmtest::FullInputs in = vmtest::MakeFullInputs(7);
  ASSERT_EQ(keel_vm_set_input(vm, 0, in.x.data(), 24, kXs, 2, KEEL_F32), KEEL_OK);
  ASSERT_EQ(keel_vm_set_input(vm, 1, in.y.data(), 16, kYs, 1, KEEL_F32), KEEL_OK);
  ASSERT_EQ(keel_vm_set_input(vm, 2, in.z.data(), 4096, kZs, 1, KEEL_F32), KEEL_OK);
  ASSERT_EQ(keel_vm_run(vm), KEEL_OK) << keel_last_error_message();
  std::vector<float> matmul(4);
  ASSERT_EQ(keel_vm_copy_output(vm, 1, matmul.data(), 16), KEEL_OK);
  EXPECT_EQ(matmul, vmtest::ReferenceFull(in).matmul);
  keel_vm_release(vm);
  std::free(buffer);
  keel_executable_release(exe);
}

}  // namespace
}  // namespace keel
