// tests/serialization/sample_executables.cc — builders for the serialization tests' executables.
#include "tests/serialization/sample_executables.h"

#include "serialization/executable_reader.h"

namespace keel::ser::samples {

namespace {
std::vector<uint8_t> Pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(seed + 7 * i);
  return v;
}
}  // namespace

SampleSpec MakeSampleSpec() {
  SampleSpec s;
  KernelDesc add;
  add.name = "k_add_f32";
  add.kind = KernelKind::kCpuGenerated;
  add.device = DeviceKind::kCpu;
  add.args = {{DType::kF32, {2, 3}, ArgAccess::kRead},
              {DType::kF32, {2, 3}, ArgAccess::kRead},
              {DType::kF32, {2, 3}, ArgAccess::kWrite}};
  s.kernels.push_back(add);

  KernelDesc gemm;
  gemm.name = "gemm0";
  gemm.kind = KernelKind::kLibrary;
  gemm.device = DeviceKind::kCuda;
  gemm.library_op = "cublas.gemm";
  gemm.args = {{DType::kF16, {4, 8}, ArgAccess::kRead}, {DType::kF16, {4}, ArgAccess::kReadWrite}};
  // Deliberately unsorted: the writer must sort by key.
  gemm.attrs = {AttrDesc::Ints("trans_a", {0, 1}), AttrDesc::Floats("alpha", {1.5, -2.25}),
                AttrDesc::Str("algo", "default")};
  gemm.workspace_bytes = (uint64_t{1} << 33) + 5;  // 64-bit field
  s.kernels.push_back(gemm);

  KernelDesc relu;
  relu.name = "relu_cuda";
  relu.kind = KernelKind::kCudaGenerated;
  relu.device = DeviceKind::kCuda;
  relu.args = {{DType::kBF16, {16}, ArgAccess::kReadWrite}};
  relu.launch = LaunchDesc{{2, 1, 1}, {128, 1, 1}, 256};
  s.kernels.push_back(relu);

  s.constants.push_back({"w0", DType::kF32, {2, 3}, DeviceKind::kCpu, Pattern(24, 1)});
  s.constants.push_back({"w1", DType::kI64, {5}, DeviceKind::kCuda, Pattern(40, 2)});
  s.constants.push_back({"empty", DType::kU8, {0}, DeviceKind::kCpu, {}});
  s.constants.push_back({"w3", DType::kF64, {}, DeviceKind::kCpu, Pattern(8, 3)});

  s.plan.strategy = "greedy-size";
  s.plan.arenas = {{DeviceKind::kCpu, 256, 64}};
  s.plan.storages = {{64, 64, DeviceKind::kCpu, 0, 0},
                     {64, 32, DeviceKind::kCpu, 0, 128},
                     {24, 16, DeviceKind::kCpu, -1, 0}};
  s.plan.lower_bound_peak_live = 128;
  s.plan.lower_bound_positional_max = (uint64_t{1} << 40) + 3;
  return s;
}

void WriteSample(const SampleSpec& spec, ExecutableWriter& w, ConstantBytes constants) {
  w.SetProducer(spec.producer);
  w.SetKernelLibraryId(spec.kernel_library_id);
  w.AddTarget(DeviceKind::kCpu, "x86-64", "+avx2,+fma");
  w.AddTarget(DeviceKind::kCuda, "sm_90");
  for (const auto& k : spec.kernels) w.AddKernel(k);
  for (const auto& c : spec.constants) {
    if (constants == ConstantBytes::kReferenced) {
      w.AddConstantRef(c.name, c.dtype, c.shape, c.device, c.bytes);
    } else {
      w.AddConstant(c.name, c.dtype, c.shape, c.device, c.bytes);
    }
  }
  w.SetMemoryPlan(spec.plan);

  // main(x: f32[2,3]) -> (y: f32[2,3]); registers: r0 = x.
  FunctionBuilder& f = w.AddFunction("main", {{"x", {2, 3}, DType::kF32, DeviceKind::kCpu}},
                                     {{"y", {2, 3}, DType::kF32, DeviceKind::kCpu}}, 8);
  f.AllocStorage(1, 0, "storage0")           // 0
      .AllocTensor(2, 1, 0, {2, 3}, DType::kF32, "t_add")  // 1
      .LoadConst(3, 0, "w0")                 // 2
      .Invoke(0, {0, 3, 2}, "Add_1")         // 3
      .AllocStorage(4, 2)                    // 4 (dynamic slot)
      .AllocTensor(5, 4, 0, {6}, DType::kF32)  // 5 (a reshape view)
      .Copy(5, 2, "copy_to_dynamic")         // 6
      .AllocStorage(6, 1)                    // 7
      .AllocTensor(7, 6, 32, {2, 3}, DType::kF32)  // 8
      .Copy(7, 5)                            // 9
      .FreeStorage(4, "free_dynamic")        // 10
      .Ret({7}, "return");                   // 11

  FunctionBuilder& h = w.AddFunction("helper", {}, {{"c", {5}, DType::kI64, DeviceKind::kCuda}}, 0);
  h.LoadConst(0, 1).Ret({0});
  h.SetNumRegisters(1);
}

std::vector<uint8_t> SampleFile() {
  ExecutableWriter w;
  WriteSample(MakeSampleSpec(), w);
  auto r = w.Finish();
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : std::vector<uint8_t>{};
}

TensorSigDesc F32x4(std::string name) { return {std::move(name), {4}, DType::kF32, DeviceKind::kCpu}; }

void MinimalBase(ExecutableWriter& w) {
  MemoryPlanDesc plan;
  plan.strategy = "test";
  plan.arenas = {{DeviceKind::kCpu, 1024, 64}};
  plan.storages = {{256, 64, DeviceKind::kCpu, 0, 0}, {64, 64, DeviceKind::kCpu, -1, 0}};
  w.SetMemoryPlan(plan);
  KernelDesc k;
  k.name = "k_add";
  k.args = {{DType::kF32, {4}, ArgAccess::kRead}, {DType::kF32, {4}, ArgAccess::kRead},
            {DType::kF32, {4}, ArgAccess::kWrite}};
  w.AddKernel(k);
  std::vector<uint8_t> bytes(16, 0x3f);
  w.AddConstant("c0", DType::kF32, {4}, DeviceKind::kCpu, bytes);
}

void ExpectReadError(const std::vector<uint8_t>& file, StatusCode code, const std::string& needle) {
  auto r = ReadExecutable(file);
  ASSERT_FALSE(r.ok()) << "expected an error containing '" << needle << "'";
  EXPECT_EQ(r.status().code(), code) << r.status().ToString();
  EXPECT_NE(r.status().message().find(needle), std::string::npos)
      << "message '" << r.status().message() << "' lacks '" << needle << "'";
}

}  // namespace keel::ser::samples
