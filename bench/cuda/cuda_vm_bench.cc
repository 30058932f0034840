// bench/cuda/cuda_vm_bench.cc — what a CUDA VM Run costs: a chain of N small
// generated kernels (launch-bound) run with and without CUDA graph replay, and a
// cuBLAS GEMM / cuDNN conv program (device-bound), per Run (host inputs copied
// in, outputs copied back, synchronized). Skips with an error without a GPU.
#include <benchmark/benchmark.h>

#include "tests/vm/cuda/cuda_test_programs.h"

namespace keel::cudatest {
namespace {

constexpr int64_t kN = 1000;

std::vector<uint8_t> ChainProgram(int n) {
  ProgramSpec p;
  p.library_id = kLibraryId;
  p.kernels.push_back(GeneratedKernel("keel_test_scale_1000", {{kN}, {kN}}, 8, 128));
  p.tensors.push_back({{kN}, Role::kInput, {}});
  for (int i = 0; i < n; ++i) p.tensors.push_back({{kN}, i + 1 == n ? Role::kOutput : Role::kTemp, {}});
  for (int i = 0; i < n; ++i) p.ops.push_back({0, {static_cast<uint32_t>(i), static_cast<uint32_t>(i + 1)}, ""});
  return *BuildProgram(p);
}

std::vector<uint8_t> ConvGemmProgram() {
  using ser::AttrDesc;
  ProgramSpec p;
  const std::vector<int64_t> xs = {1, 64, 56, 56}, ws = {64, 64, 3, 3};
  p.kernels.push_back(LibraryKernel("conv", "cudnn.conv2d", {xs, ws, {64}, xs},
                                    {AttrDesc::Ints("pads", {1, 1, 1, 1}), AttrDesc::Ints("has_bias", {1}),
                                     AttrDesc::Str("activation", "relu")}));
  p.kernels.push_back(LibraryKernel("gemm", "cublas.gemm", {{3136, 64}, {64, 256}, {3136, 256}},
                                    {AttrDesc::Ints("m", {3136}), AttrDesc::Ints("n", {256}), AttrDesc::Ints("k", {64})}));
  p.tensors = {{xs, Role::kInput, {}},
               {ws, Role::kConst, Random(64 * 64 * 9, 1)},
               {{64}, Role::kConst, Random(64, 2)},
               {xs, Role::kTemp, {}},
               {{64, 256}, Role::kConst, Random(64 * 256, 3)},
               {{3136, 256}, Role::kOutput, {}}};
  p.ops = {{0, {0, 1, 2, 3}, "conv"}, {1, {3, 4, 5}, "gemm"}};
  return *BuildProgram(p);
}

void RunProgram(benchmark::State& state, const std::vector<uint8_t>& bytes, bool graph) {
  std::string why;
  if (!GpuAvailable(&why)) {
    state.SkipWithError(why.c_str());
    return;
  }
  LoadOptions lo;
  lo.library_path = LibraryPath(KEEL_CUDA_TEST_KERNELS);
  auto exe = Executable::LoadMemory(bytes, lo);
  if (!exe.ok()) return state.SkipWithError(exe.status().ToString().c_str());
  VmOptions o;
  o.device = "cuda";
  o.cuda_graph = graph;
  auto vm = VirtualMachine::Create(*exe, o);
  if (!vm.ok()) return state.SkipWithError(vm.status().ToString().c_str());
  const TensorInfo& in = (*exe)->input(0);
  const auto x = Random(in.byte_size / 4, 9);
  if (!(*vm)->SetInput(0, x.data(), in.byte_size, in.shape, in.dtype).ok()) return state.SkipWithError("SetInput");
  for (auto _ : state) {
    Status s = (*vm)->Run();
    if (!s.ok()) return state.SkipWithError(s.ToString().c_str());
  }
}

void BM_KernelChain(benchmark::State& state) {
  RunProgram(state, ChainProgram(static_cast<int>(state.range(0))), state.range(1) != 0);
  state.SetLabel(state.range(1) ? "cuda graph" : "no graph");
}
BENCHMARK(BM_KernelChain)->ArgsProduct({{1, 16, 128}, {0, 1}})->UseRealTime();

void BM_ConvGemm(benchmark::State& state) {
  RunProgram(state, ConvGemmProgram(), state.range(0) != 0);
  state.SetLabel(state.range(0) ? "cuda graph" : "no graph");
}
BENCHMARK(BM_ConvGemm)->Arg(0)->Arg(1)->UseRealTime();

}  // namespace
}  // namespace keel::cudatest

BENCHMARK_MAIN();
