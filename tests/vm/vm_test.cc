// tests/vm/vm_test.cc — end-to-end tests of the C++ API (keel/vm.h) on the CPU:
// every instruction, static vs dynamic plan, inputs/outputs (copy, bind, by name
// and index), tracing, and the run-time errors of the VM.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "keel/vm.h"
#include "tests/vm/test_programs.h"
#include "vm/trace.h"

namespace keel {
namespace {
using vmtest::Plan;

std::shared_ptr<const Executable> Load(const std::vector<uint8_t>& bytes) {
  LoadOptions o;
  o.library_path = KEEL_TEST_KERNELS;
  auto r = Executable::LoadMemory(bytes, o);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : nullptr;
}

std::vector<float> OutputVector(const VirtualMachine& vm, size_t index) {
  auto v = vm.GetOutput(index);
  EXPECT_TRUE(v.ok()) << v.status().ToString();
  if (!v.ok()) return {};
  const float* p = static_cast<const float*>(v->data);
  return std::vector<float>(p, p + v->byte_size / sizeof(float));
}

void SetFullInputs(VirtualMachine& vm, const vmtest::FullInputs& in) {
  const int64_t xs[] = {2, 3}, ys[] = {4}, zs[] = {1024};
  ASSERT_TRUE(vm.SetInput("x", in.x.data(), in.x.size() * 4, xs, DataType::kF32).ok());
  ASSERT_TRUE(vm.SetInput(1, in.y.data(), in.y.size() * 4, ys, DataType::kF32).ok());
  ASSERT_TRUE(vm.SetInput("z", in.z.data(), in.z.size() * 4, zs, DataType::kF32).ok());
}

class FullProgramTest : public ::testing::TestWithParam<Plan> {};

TEST_P(FullProgramTest, MatchesReference) {
  auto bytes = vmtest::FullProgram(GetParam());
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  auto exe = Load(*bytes);
  ASSERT_NE(exe, nullptr);
  EXPECT_EQ(exe->num_inputs(), 3u);
  EXPECT_EQ(exe->num_outputs(), 3u);
  EXPECT_EQ(exe->input(0).name, "x");
  EXPECT_EQ(exe->output(2).byte_size, 4096u);
  for (int threads : {1, 3}) {
    VmOptions o;
    o.num_threads = threads;
    auto vm = VirtualMachine::Create(exe, o);
    ASSERT_TRUE(vm.ok()) << vm.status().ToString();
    EXPECT_EQ((*vm)->num_threads(), threads);
    for (int seed = 0; seed < 3; ++seed) {
      const auto in = vmtest::MakeFullInputs(seed);
      SetFullInputs(**vm, in);
      ASSERT_TRUE((*vm)->Run().ok());
      const auto ref = vmtest::ReferenceFull(in);
      EXPECT_EQ(OutputVector(**vm, 0), ref.relu);
      EXPECT_EQ(OutputVector(**vm, 1), ref.matmul);
      EXPECT_EQ(OutputVector(**vm, 2), ref.scaled);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Plans, FullProgramTest, ::testing::Values(Plan::kStatic, Plan::kDynamic),
                         [](const auto& info) { return info.param == Plan::kStatic ? "Static" : "Dynamic"; });

TEST(VmTest, StaticAndDynamicPlansGiveIdenticalOutputs) {
  auto s = Load(*vmtest::FullProgram(Plan::kStatic));
  auto d = Load(*vmtest::FullProgram(Plan::kDynamic));
  ASSERT_TRUE(s && d);
  EXPECT_EQ(d->plan_strategy(), "dynamic");
  auto vs = VirtualMachine::Create(s);
  auto vd = VirtualMachine::Create(d);
  ASSERT_TRUE(vs.ok() && vd.ok());
  const auto in = vmtest::MakeFullInputs(5);
  SetFullInputs(**vs, in);
  SetFullInputs(**vd, in);
  ASSERT_TRUE((*vs)->Run().ok());
  ASSERT_TRUE((*vd)->Run().ok());
  for (size_t i = 0; i < 3; ++i) {
    auto a = (*vs)->GetOutput(i), b = (*vd)->GetOutput(i);
    ASSERT_TRUE(a.ok() && b.ok());
    ASSERT_EQ(a->byte_size, b->byte_size);
    EXPECT_EQ(std::memcmp(a->data, b->data, a->byte_size), 0) << "output " << i;
  }
}

TEST(VmTest, BindInputAndOutputBuffers) {
  auto exe = Load(*vmtest::FullProgram(Plan::kStatic));
  auto vm = VirtualMachine::Create(exe);
  ASSERT_TRUE(vm.ok());
  auto in = vmtest::MakeFullInputs(2);
  const int64_t xs[] = {2, 3}, ys[] = {4}, zs[] = {1024};
  ASSERT_TRUE((*vm)->BindInput("x", in.x.data(), 24, xs, DataType::kF32).ok());
  ASSERT_TRUE((*vm)->BindInput("y", in.y.data(), 16, ys, DataType::kF32).ok());
  ASSERT_TRUE((*vm)->BindInput("z", in.z.data(), 4096, zs, DataType::kF32).ok());
  std::vector<float> relu(4, -99.0f), scaled(1024, -99.0f);
  ASSERT_TRUE((*vm)->BindOutput("relu", relu.data(), 16).ok());
  ASSERT_TRUE((*vm)->BindOutput(2, scaled.data(), 4096).ok());
  EXPECT_EQ((*vm)->BindOutput(1, scaled.data(), 4096).code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE((*vm)->Run().ok());
  auto ref = vmtest::ReferenceFull(in);
  EXPECT_EQ(relu, ref.relu);
  EXPECT_EQ(scaled, ref.scaled);
  // Zero copy: a change to the caller's buffer is seen by the next Run.
  in.y = {10, 20, 30, 40};
  ASSERT_TRUE((*vm)->Run().ok());
  EXPECT_EQ(relu, vmtest::ReferenceFull(in).relu);
  std::vector<float> mm(4);
  ASSERT_TRUE((*vm)->CopyOutputToHost(1, mm.data(), 16).ok());
  EXPECT_EQ(mm, ref.matmul);
}

TEST(VmTest, InputErrorsNameTheInput) {
  auto exe = Load(*vmtest::FullProgram(Plan::kStatic));
  auto vm = VirtualMachine::Create(exe);
  ASSERT_TRUE(vm.ok());
  std::vector<float> buf(1024);
  const int64_t wrong[] = {3, 2}, right[] = {2, 3};
  Status s = (*vm)->SetInput("x", buf.data(), 24, wrong, DataType::kF32);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("\"x\""), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("expected shape [2,3]"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("got [3,2]"), std::string::npos) << s.message();
  s = (*vm)->SetInput("x", buf.data(), 24, right, DataType::kI32);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("i32"), std::string::npos) << s.message();
  s = (*vm)->SetInput("x", buf.data(), 20, right, DataType::kF32);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("24 bytes"), std::string::npos) << s.message();
  s = (*vm)->SetInput("nope", buf.data(), 24, right, DataType::kF32);
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_NE(s.message().find("nope"), std::string::npos) << s.message();
  EXPECT_EQ((*vm)->SetInput(7, buf.data(), 24, right, DataType::kF32).code(), StatusCode::kInvalidArgument);
  // Run before every input is set, and outputs before a run.
  ASSERT_TRUE((*vm)->SetInput("x", buf.data(), 24, right, DataType::kF32).ok());
  s = (*vm)->Run();
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("\"y\""), std::string::npos) << s.message();
  EXPECT_EQ((*vm)->GetOutput(0).status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ((*vm)->GetOutput("nope").status().code(), StatusCode::kNotFound);
}

TEST(VmTest, FailingKernelIsAnErrorNamingIt) {
  ser::ExecutableWriter w;
  w.SetKernelLibraryId(vmtest::kLibraryId);
  vmtest::AddTestKernels(w);
  ser::MemoryPlanDesc mp;
  mp.strategy = "naive";
  w.SetMemoryPlan(mp);
  ser::TensorSigDesc x{"x", {4}, ser::DType::kF32, ser::DeviceKind::kCpu};
  w.AddFunction("main", {x}, {x}, 1).Invoke(vmtest::kFail, {}, "boom").Ret({0});
  auto bytes = w.Finish();
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  auto exe = Load(*bytes);
  ASSERT_NE(exe, nullptr);
  auto vm = VirtualMachine::Create(exe);
  ASSERT_TRUE(vm.ok());
  float v[4] = {1, 2, 3, 4};
  const int64_t shape[] = {4};
  ASSERT_TRUE((*vm)->SetInput(0, v, 16, shape, DataType::kF32).ok());
  Status s = (*vm)->Run();
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("test_fail"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("boom"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("code 7"), std::string::npos) << s.message();
}

TEST(VmTest, TraceReportsEveryInstructionWithItsDeviceOperation) {
  for (Plan plan : {Plan::kStatic, Plan::kDynamic}) {
    auto exe = Load(*vmtest::FullProgram(plan));
    auto vm = VirtualMachine::Create(exe);
    ASSERT_TRUE(vm.ok());
    SetFullInputs(**vm, vmtest::MakeFullInputs(1));
    TraceRecorder rec;
    (*vm)->SetTraceObserver(&rec);
    ASSERT_TRUE((*vm)->Run().ok());
    ASSERT_EQ(rec.events().size(), exe->num_instructions());
    int launches = 0, allocs = 0, frees = 0, slices = 0, copies = 0;
    for (size_t i = 0; i < rec.events().size(); ++i) {
      const auto& e = rec.events()[i];
      EXPECT_EQ(e.instruction_index, i);
      switch (e.op_kind) {
        case DeviceOpKind::kLaunch: ++launches; EXPECT_FALSE(e.kernel.empty()); break;
        case DeviceOpKind::kAllocate: ++allocs; EXPECT_GT(e.bytes, 0u); break;
        case DeviceOpKind::kFree: ++frees; break;
        case DeviceOpKind::kArenaSlice: ++slices; break;
        case DeviceOpKind::kCopy: ++copies; EXPECT_EQ(e.bytes, 16u); break;
        default: break;
      }
    }
    EXPECT_EQ(launches, 5);
    EXPECT_EQ(copies, 1);
    if (plan == Plan::kStatic) {
      EXPECT_EQ(slices, 5);
      EXPECT_EQ(allocs, 0);
    } else {
      EXPECT_EQ(allocs, 5);
      EXPECT_EQ(frees, 2);
    }
    const auto& first = rec.events()[0];
    EXPECT_EQ(first.debug_name, "add.buf");
    TraceEvent ev;
    ev.instruction_index = 3;
    ev.opcode = OpCode::kInvoke;
    ev.op.kind = DeviceOpKind::kLaunch;
    ev.op.call = "call";
    ev.op.kernel = "k";
    ev.duration_ns = 12;
    EXPECT_EQ(FormatTraceEvent(ev), "#3 invoke launch call kernel=k 12 ns");
    // Detach: no more events.
    (*vm)->SetTraceObserver(nullptr);
    rec.Clear();
    ASSERT_TRUE((*vm)->Run().ok());
    EXPECT_TRUE(rec.events().empty());
  }
}

// Records set-up events (VM creation) and ignores instructions.
class SetupRecorder final : public TraceObserver {
 public:
  void OnInstruction(const TraceEvent&) override { ++instructions; }
  void OnSetup(std::string_view what, const DeviceOp& op) override {
    labels.emplace_back(what);
    ops.push_back(op);
  }
  std::vector<std::string> labels;
  std::vector<DeviceOp> ops;
  int instructions = 0;
};

TEST(VmTest, TraceReportsTheSetUpAllocationsOfCreate) {
  for (Plan plan : {Plan::kStatic, Plan::kDynamic}) {
    auto exe = Load(*vmtest::FullProgram(plan));
    SetupRecorder rec;
    VmOptions options;
    options.trace = &rec;
    auto vm = VirtualMachine::Create(exe, options);
    ASSERT_TRUE(vm.ok());
    // One allocation per static arena, plus one per input buffer; the dynamic plan has no arena.
    int arenas = 0, inputs = 0;
    for (size_t i = 0; i < rec.labels.size(); ++i) {
      EXPECT_EQ(rec.ops[i].kind, DeviceOpKind::kAllocate) << rec.labels[i];
      EXPECT_GT(rec.ops[i].bytes, 0u);
      arenas += rec.labels[i].rfind("arena ", 0) == 0;
      inputs += rec.labels[i].rfind("input ", 0) == 0;
    }
    EXPECT_EQ(arenas, plan == Plan::kStatic ? 1 : 0);
    EXPECT_EQ(inputs, static_cast<int>(exe->num_inputs()));
    EXPECT_EQ(rec.instructions, 0);
    EXPECT_NE(FormatSetupEvent("arena 0", rec.ops.front()).find("setup ["), std::string::npos);
    // The creation observer also receives the instructions of later runs.
    SetFullInputs(**vm, vmtest::MakeFullInputs(1));
    ASSERT_TRUE((*vm)->Run().ok());
    EXPECT_EQ(rec.instructions, static_cast<int>(exe->num_instructions()));
  }
}

TEST(VmTest, LoadFileDefaultsToLibraryNextToIt) {
  const auto dir = std::filesystem::temp_directory_path() / ("keel_vm_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string model = (dir / "m.keel").string();
  ASSERT_TRUE(vmtest::WriteBytes(model, *vmtest::FullProgram(Plan::kStatic)));
  auto missing = Executable::LoadFile(model);
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("m.keel.so"), std::string::npos) << missing.status().message();
  std::filesystem::copy_file(KEEL_TEST_KERNELS, model + ".so", std::filesystem::copy_options::overwrite_existing);
  auto exe = Executable::LoadFile(model);
  ASSERT_TRUE(exe.ok()) << exe.status().ToString();
  EXPECT_EQ((*exe)->library_path(), model + ".so");
  auto vm = VirtualMachine::Create(*exe);
  ASSERT_TRUE(vm.ok());
  const auto in = vmtest::MakeFullInputs(4);
  SetFullInputs(**vm, in);
  ASSERT_TRUE((*vm)->Run().ok());
  EXPECT_EQ(OutputVector(**vm, 1), vmtest::ReferenceFull(in).matmul);
  std::filesystem::remove_all(dir);
}

TEST(VmTest, BorrowedBufferIsUsedInPlace) {
  auto bytes = *vmtest::FullProgram(Plan::kStatic);
  LoadOptions o;
  o.library_path = KEEL_TEST_KERNELS;
  o.borrow_buffer = true;
  auto exe = Executable::LoadMemory(bytes, o);
  ASSERT_TRUE(exe.ok()) << exe.status().ToString();
  auto vm = VirtualMachine::Create(*exe);
  ASSERT_TRUE(vm.ok());
  const auto in = vmtest::MakeFullInputs(0);
  SetFullInputs(**vm, in);
  ASSERT_TRUE((*vm)->Run().ok());
  EXPECT_EQ(OutputVector(**vm, 0), vmtest::ReferenceFull(in).relu);
}

TEST(VmTest, UnknownDeviceIsRejected) {
  auto exe = Load(*vmtest::FullProgram(Plan::kStatic));
  VmOptions o;
  o.device = "tpu";
  EXPECT_EQ(VirtualMachine::Create(exe, o).status().code(), StatusCode::kInvalidArgument);
  o.device = "cuda:x";
  EXPECT_EQ(VirtualMachine::Create(exe, o).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(VirtualMachine::Create(nullptr).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace keel
