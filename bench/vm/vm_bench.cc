// bench/vm/vm_bench.cc — the VM's fixed costs on the CPU:
//   * dispatch: Run of a program of N invokes of an empty kernel, or of N
//     alloc_tensors; the counter ns_per_instruction divides by N (target <= 25 ns);
//   * load: Executable::LoadMemory / LoadFile of a 10,000-instruction executable
//     (target < 1 ms).
#include <benchmark/benchmark.h>

#include <filesystem>
#include <unistd.h>

#include "keel/vm.h"
#include "tests/vm/test_programs.h"

namespace {

std::shared_ptr<const keel::Executable> LoadOrDie(const std::vector<uint8_t>& bytes) {
  keel::LoadOptions o;
  o.library_path = KEEL_TEST_KERNELS;
  auto exe = keel::Executable::LoadMemory(bytes, o);
  if (!exe.ok()) {
    std::fprintf(stderr, "load failed: %s\n", exe.status().ToString().c_str());
    std::exit(1);
  }
  return *exe;
}

void Dispatch(benchmark::State& state, bool alloc_tensors) {
  const auto n = static_cast<uint32_t>(state.range(0));
  auto exe = LoadOrDie(*keel::vmtest::DispatchProgram(n, alloc_tensors));
  keel::VmOptions vo;
  vo.num_threads = 1;
  auto vm = keel::VirtualMachine::Create(exe, vo);
  if (!vm.ok()) {
    state.SkipWithError(vm.status().ToString().c_str());
    return;
  }
  for (auto _ : state) {
    keel::Status s = (*vm)->Run();
    benchmark::DoNotOptimize(s);
  }
  const double instructions = static_cast<double>(exe->num_instructions());
  // kIsRate|kInvert gives cpu_seconds / value; a value of N * 1e-9 makes it ns per instruction.
  state.counters["ns_per_instruction"] =
      benchmark::Counter(instructions * static_cast<double>(state.iterations()) * 1e-9,
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void BM_DispatchInvokeEmpty(benchmark::State& state) { Dispatch(state, false); }
void BM_DispatchAllocTensor(benchmark::State& state) { Dispatch(state, true); }
BENCHMARK(BM_DispatchInvokeEmpty)->Arg(1000)->Arg(10000);
BENCHMARK(BM_DispatchAllocTensor)->Arg(1000)->Arg(10000);

void BM_LoadFromMemory(benchmark::State& state) {
  const auto bytes = *keel::vmtest::DispatchProgram(10000, false);
  keel::LoadOptions o;
  o.library_path = KEEL_TEST_KERNELS;
  for (auto _ : state) {
    auto exe = keel::Executable::LoadMemory(bytes, o);
    if (!exe.ok()) state.SkipWithError(exe.status().ToString().c_str());
    benchmark::DoNotOptimize(exe);
  }
  state.counters["file_bytes"] = static_cast<double>(bytes.size());
}
BENCHMARK(BM_LoadFromMemory)->Unit(benchmark::kMicrosecond);

void BM_LoadFromFile(benchmark::State& state) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("keel_vm_bench_" + std::to_string(::getpid()) + ".keel")).string();
  if (!keel::vmtest::WriteBytes(path, *keel::vmtest::DispatchProgram(10000, false))) {
    state.SkipWithError("cannot write the benchmark executable");
    return;
  }
  keel::LoadOptions o;
  o.library_path = KEEL_TEST_KERNELS;
  for (auto _ : state) {
    auto exe = keel::Executable::LoadFile(path, o);
    if (!exe.ok()) state.SkipWithError(exe.status().ToString().c_str());
    benchmark::DoNotOptimize(exe);
  }
  std::filesystem::remove(path);
}
BENCHMARK(BM_LoadFromFile)->Unit(benchmark::kMicrosecond);

void BM_VmCreate(benchmark::State& state) {
  auto exe = LoadOrDie(*keel::vmtest::FullProgram(keel::vmtest::Plan::kStatic));
  keel::VmOptions vo;
  vo.num_threads = 1;
  for (auto _ : state) {
    auto vm = keel::VirtualMachine::Create(exe, vo);
    benchmark::DoNotOptimize(vm);
  }
}
BENCHMARK(BM_VmCreate)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
