// tests/vm/cuda/cuda_vm_test.cc — the CUDA device: generated kernels from the
// kernel library's module (cubin, PTX-only, wrong-arch cubin -> PTX), load
// errors, out-of-memory at VM creation, no cudaMalloc during a static-plan Run,
// CUDA graph capture/replay agreeing bit-exactly with plain runs, and tracing.
// Every test but the first skips when no GPU is present.
#include <gtest/gtest.h>

#include <cstring>

#include "tests/vm/cuda/cuda_test_programs.h"
#include "vm/trace.h"

namespace keel::cudatest {
namespace {

constexpr int64_t kN = 1000;

// out0 = 2 * relu(in0 + in1) + 1, through two generated kernels.
Result<std::vector<uint8_t>> GeneratedProgram(const std::string& add_name = "keel_test_add_relu_1000") {
  ProgramSpec p;
  p.library_id = kLibraryId;
  p.kernels.push_back(GeneratedKernel(add_name, {{kN}, {kN}, {kN}}, 4, 256));
  p.kernels.push_back(GeneratedKernel("keel_test_scale_1000", {{kN}, {kN}}, 8, 128));
  p.tensors = {{{kN}, Role::kInput, {}}, {{kN}, Role::kInput, {}}, {{kN}, Role::kTemp, {}}, {{kN}, Role::kOutput, {}}};
  p.ops = {{0, {0, 1, 2}, "add_relu"}, {1, {2, 3}, "scale"}};
  return BuildProgram(p);
}

std::vector<float> ReferenceGenerated(const std::vector<float>& a, const std::vector<float>& b) {
  std::vector<float> y(a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    const float v = a[i] + b[i];
    y[i] = 2.f * (v > 0.f ? v : 0.f) + 1.f;
  }
  return y;
}

// Loads `bytes` with the test kernel library.
Result<std::shared_ptr<const Executable>> LoadWithTestKernels(const std::vector<uint8_t>& bytes) {
  LoadOptions lo;
  lo.library_path = LibraryPath(KEEL_CUDA_TEST_KERNELS);
  return Executable::LoadMemory(bytes, lo);
}

VmOptions OnCuda() {
  VmOptions o;
  o.device = "cuda";
  return o;
}

TEST(CudaDevice, WithoutGpuCreationFailsCleanly) {
  std::string why;
  if (GpuAvailable(&why)) GTEST_SKIP() << "a GPU is present; this test covers machines without one";
  auto bytes = GeneratedProgram();
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  auto exe = LoadWithTestKernels(*bytes);
  ASSERT_TRUE(exe.ok()) << exe.status().ToString();
  auto vm = VirtualMachine::Create(*exe, OnCuda());
  ASSERT_FALSE(vm.ok());
  EXPECT_EQ(vm.status().code(), StatusCode::kUnsupported) << vm.status().ToString();
  EXPECT_NE(vm.status().message().find("CUDA"), std::string::npos) << vm.status().ToString();
}

class GeneratedKernels : public ::testing::TestWithParam<const char*> {};

TEST_P(GeneratedKernels, MatchReference) {
  KEEL_SKIP_WITHOUT_GPU();
  auto bytes = GeneratedProgram();
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  const auto a = Random(kN, 1), b = Random(kN, 2);
  VmOptions o;
  o.device = "cuda";
  RunResult r = RunOnce(*bytes, LibraryPath(GetParam()), {a, b}, o);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(r.outputs[0], ReferenceGenerated(a, b));  // exact: one add, one fma-free scale
}

INSTANTIATE_TEST_SUITE_P(Modules, GeneratedKernels,
                         ::testing::Values(KEEL_CUDA_TEST_KERNELS, KEEL_CUDA_TEST_KERNELS_PTX,
                                           KEEL_CUDA_TEST_KERNELS_SM80));

TEST(CudaDevice, MissingKernelIsNotFound) {
  KEEL_SKIP_WITHOUT_GPU();
  auto bytes = GeneratedProgram("keel_test_no_such_kernel");
  ASSERT_TRUE(bytes.ok());
  VmOptions o;
  o.device = "cuda";
  RunResult r = RunOnce(*bytes, LibraryPath(KEEL_CUDA_TEST_KERNELS), {Random(kN, 1), Random(kN, 2)}, o);
  EXPECT_EQ(r.status.code(), StatusCode::kNotFound) << r.status.ToString();
  EXPECT_NE(r.status.message().find("keel_test_no_such_kernel"), std::string::npos) << r.status.ToString();
}

TEST(CudaDevice, ArenaLargerThanDeviceIsOutOfMemoryAtCreation) {
  KEEL_SKIP_WITHOUT_GPU();
  ProgramSpec p;
  p.library_id = kLibraryId;
  p.kernels.push_back(GeneratedKernel("keel_test_scale_1000", {{kN}, {kN}}, 8, 128));
  p.tensors = {{{kN}, Role::kInput, {}}, {{kN}, Role::kOutput, {}}};
  p.ops = {{0, {0, 1}, "scale"}};
  p.device_arena_override = uint64_t{1} << 50;  // 1 PiB
  auto bytes = BuildProgram(p);
  ASSERT_TRUE(bytes.ok());
  auto exe = LoadWithTestKernels(*bytes);
  ASSERT_TRUE(exe.ok()) << exe.status().ToString();
  auto vm = VirtualMachine::Create(*exe, OnCuda());
  ASSERT_FALSE(vm.ok());
  EXPECT_EQ(vm.status().code(), StatusCode::kOutOfMemory) << vm.status().ToString();
  EXPECT_NE(vm.status().message().find(std::to_string(uint64_t{1} << 50)), std::string::npos)
      << vm.status().ToString();
  // The device is still usable afterwards.
  RunResult r = RunOnce(*GeneratedProgram(), LibraryPath(KEEL_CUDA_TEST_KERNELS), {Random(kN, 1), Random(kN, 2)}, OnCuda());
  EXPECT_TRUE(r.status.ok()) << r.status.ToString();
}

// A program mixing a generated kernel and a cuBLAS gemm (constant weights); with
// `second_gemm`, a third output: the gemm of t1 with a second constant.
Result<std::vector<uint8_t>> MixedProgram(bool second_gemm = false) {
  ProgramSpec p;
  p.library_id = kLibraryId;
  p.kernels.push_back(GeneratedKernel("keel_test_scale_1000", {{kN}, {kN}}, 8, 128));
  p.kernels.push_back(LibraryKernel("gemm", "cublas.gemm", {{10, 100}, {100, 30}, {10, 30}},
                                    {ser::AttrDesc::Ints("m", {10}), ser::AttrDesc::Ints("n", {30}),
                                     ser::AttrDesc::Ints("k", {100}), ser::AttrDesc::Str("epilogue", "relu")}));
  p.tensors = {{{kN}, Role::kInput, {}},
               {{kN}, Role::kTemp, {}},
               {{100, 30}, Role::kConst, Random(3000, 7)},
               {{10, 30}, Role::kOutput, {}},
               {{kN}, Role::kOutput, {}}};
  // scale(in0) -> t1 (viewed as [10,100] by the gemm's signature), gemm(t1, w) -> out0, scale(t1) -> out1
  p.ops = {{0, {0, 1}, "scale"}, {1, {1, 2, 3}, "gemm"}, {0, {1, 4}, "scale2"}};
  if (second_gemm) {
    p.tensors.push_back({{100, 30}, Role::kConst, Random(3000, 8)});
    p.tensors.push_back({{10, 30}, Role::kOutput, {}});
    p.ops.push_back({1, {1, 5, 6}, "gemm2"});
  }
  return BuildProgram(p);
}

// Every output of `a` and `b` (two VMs of `exe` after a Run) equal byte for byte.
void ExpectSameOutputs(const Executable& exe, VirtualMachine& a, VirtualMachine& b, const std::string& label) {
  for (size_t j = 0; j < exe.num_outputs(); ++j) {
    const uint64_t n = exe.output(j).byte_size;
    std::vector<uint8_t> x(n), y(n);
    ASSERT_TRUE(a.CopyOutputToHost(j, x.data(), n).ok());
    ASSERT_TRUE(b.CopyOutputToHost(j, y.data(), n).ok());
    EXPECT_EQ(0, std::memcmp(x.data(), y.data(), n)) << label << " output " << j;
  }
}

TEST(CudaGraph, ReplayMatchesPlainRunsBitExactly) {
  KEEL_SKIP_WITHOUT_GPU();
  auto bytes = MixedProgram();
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  LoadOptions lo;
  lo.library_path = LibraryPath(KEEL_CUDA_TEST_KERNELS);
  auto exe = Executable::LoadMemory(*bytes, lo);
  ASSERT_TRUE(exe.ok()) << exe.status().ToString();
  VmOptions graph_opts, plain_opts;
  graph_opts.device = plain_opts.device = "cuda";
  plain_opts.cuda_graph = false;
  auto graph_vm = VirtualMachine::Create(*exe, graph_opts);
  auto plain_vm = VirtualMachine::Create(*exe, plain_opts);
  ASSERT_TRUE(graph_vm.ok()) << graph_vm.status().ToString();
  ASSERT_TRUE(plain_vm.ok()) << plain_vm.status().ToString();
  const std::vector<int64_t> shape = {kN};
  std::vector<float> bound(kN);
  for (int run = 0; run < 4; ++run) {
    const auto x = Random(kN, 100 + run);
    // Runs 0-1: SetInput; runs 2-3: BindInput of one host buffer whose contents change
    // (the graph must see the new values: the VM stages bound inputs).
    if (run < 2) {
      ASSERT_TRUE((*graph_vm)->SetInput(0, x.data(), kN * 4, shape, DataType::kF32).ok());
    } else {
      std::memcpy(bound.data(), x.data(), kN * 4);
      ASSERT_TRUE((*graph_vm)->BindInput(0, bound.data(), kN * 4, shape, DataType::kF32).ok());
    }
    ASSERT_TRUE((*plain_vm)->SetInput(0, x.data(), kN * 4, shape, DataType::kF32).ok());
    Status gs = (*graph_vm)->Run();
    Status ps = (*plain_vm)->Run();
    ASSERT_TRUE(gs.ok()) << gs.ToString();
    ASSERT_TRUE(ps.ok()) << ps.ToString();
    ExpectSameOutputs(**exe, **graph_vm, **plain_vm, "run " + std::to_string(run));
    // And against the CPU reference.
    std::vector<float> t(kN);
    for (int64_t i = 0; i < kN; ++i) t[i] = 2.f * x[i] + 1.f;
    GemmRef ref;
    ref.m = 10;
    ref.n = 30;
    ref.k = 100;
    ref.epilogue = "relu";
    std::vector<float> y0(300), y1(kN);
    ASSERT_TRUE((*graph_vm)->CopyOutputToHost(0, y0.data(), 1200).ok());
    ASSERT_TRUE((*graph_vm)->CopyOutputToHost(1, y1.data(), kN * 4).ok());
    EXPECT_LE(RelL2(y0, ReferenceGemm(ref, t, Random(3000, 7), {})), 1e-5) << "run " << run;
    for (int64_t i = 0; i < kN; ++i) ASSERT_EQ(y1[i], 2.f * t[i] + 1.f) << i;
  }
}

// VmOptions::cuda_l2_prefetch: the recorded run prefetches the second gemm's weights (the
// first has no gemm before it), the trace shows that launch, and the replays' results are
// those of plain runs, bit for bit. Off (0), nothing is prefetched.
TEST(CudaGraph, L2PrefetchOfWeightsLeavesResultsUnchanged) {
  KEEL_SKIP_WITHOUT_GPU();
  auto bytes = MixedProgram(/*second_gemm=*/true);
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  auto exe = LoadWithTestKernels(*bytes);
  ASSERT_TRUE(exe.ok()) << exe.status().ToString();
  VmOptions plain_opts = OnCuda();
  plain_opts.cuda_graph = false;
  auto plain_vm = VirtualMachine::Create(*exe, plain_opts);
  ASSERT_TRUE(plain_vm.ok()) << plain_vm.status().ToString();
  const std::vector<int64_t> shape = {kN};
  for (int distance : {0, 1}) {
    SCOPED_TRACE("distance " + std::to_string(distance));
    VmOptions o = OnCuda();
    o.cuda_l2_prefetch = distance;
    auto vm = VirtualMachine::Create(*exe, o);
    ASSERT_TRUE(vm.ok()) << vm.status().ToString();
    TraceRecorder rec;
    (*vm)->SetTraceObserver(&rec);
    for (int run = 0; run < 3; ++run) {
      const auto x = Random(kN, 200 + run);
      ASSERT_TRUE((*vm)->SetInput(0, x.data(), kN * 4, shape, DataType::kF32).ok());
      ASSERT_TRUE((*plain_vm)->SetInput(0, x.data(), kN * 4, shape, DataType::kF32).ok());
      rec.Clear();
      Status gs = (*vm)->Run();
      ASSERT_TRUE(gs.ok()) << gs.ToString();
      ASSERT_TRUE((*plain_vm)->Run().ok());
      if (run == 0) {  // the recording run reports its operations
        int prefetches = 0;
        for (const RecordedTraceEvent& e : rec.events()) {
          if (e.op_kind == DeviceOpKind::kPrefetch && e.kernel == "keel_prefetch_l2") ++prefetches;
        }
        EXPECT_EQ(prefetches, distance == 0 ? 0 : 1);
      }
      ExpectSameOutputs(**exe, **vm, **plain_vm, "run " + std::to_string(run));
    }
  }
}

TEST(CudaTrace, StaticPlanRunMakesNoCudaMallocAndReportsDeviceCalls) {
  KEEL_SKIP_WITHOUT_GPU();
  auto bytes = MixedProgram();
  ASSERT_TRUE(bytes.ok());
  LoadOptions lo;
  lo.library_path = LibraryPath(KEEL_CUDA_TEST_KERNELS);
  auto exe = Executable::LoadMemory(*bytes, lo);
  ASSERT_TRUE(exe.ok());
  for (bool graph : {false, true}) {
    SCOPED_TRACE(graph ? "cuda graph" : "no graph");
    VmOptions o;
    o.device = "cuda";
    o.cuda_graph = graph;
    auto vm = VirtualMachine::Create(*exe, o);
    ASSERT_TRUE(vm.ok()) << vm.status().ToString();
    const auto x = Random(kN, 5);
    const std::vector<int64_t> shape = {kN};
    ASSERT_TRUE((*vm)->SetInput(0, x.data(), kN * 4, shape, DataType::kF32).ok());
    TraceRecorder rec;
    (*vm)->SetTraceObserver(&rec);
    for (int run = 0; run < 3; ++run) {
      rec.Clear();
      Status s = (*vm)->Run();
      ASSERT_TRUE(s.ok()) << s.ToString();
      int allocs = 0, h2d = 0, d2h = 0, launches = 0, replays = 0, gemm = 0;
      for (const RecordedTraceEvent& e : rec.events()) {
        if (e.op_kind == DeviceOpKind::kAllocate || e.call == "cudaMalloc") ++allocs;
        if (e.op_kind == DeviceOpKind::kCopy && e.call == "cudaMemcpyAsync") {
          h2d += e.direction == CopyDirection::kHostToDevice;
          d2h += e.direction == CopyDirection::kDeviceToHost;
        }
        if (e.op_kind == DeviceOpKind::kLaunch && e.call.rfind("cuLaunchKernel grid=(8,1,1) block=(128,1,1)", 0) == 0) {
          ++launches;
        }
        if (e.op_kind == DeviceOpKind::kLaunch && e.call.rfind("cublasLtMatmul algo=", 0) == 0) ++gemm;
        if (e.call == "cudaGraphLaunch") ++replays;
      }
      EXPECT_EQ(allocs, 0) << "run " << run;
      if (graph && run > 0) {
        EXPECT_EQ(rec.events().size(), 1u);
        EXPECT_EQ(replays, 1);
      } else {
        EXPECT_EQ(h2d, 1) << "run " << run;
        EXPECT_EQ(d2h, 2) << "run " << run;
        EXPECT_EQ(launches, 2) << "run " << run;
        EXPECT_EQ(gemm, 1) << "run " << run;
        EXPECT_EQ(replays, 0) << "run " << run;  // a recording run reports its instructions
      }
    }
    (*vm)->SetTraceObserver(nullptr);
  }
}

}  // namespace
}  // namespace keel::cudatest
