// Tests for compiler/lower: buffer assignment (views, lifetimes, workspaces, host
// I/O) and the bytecode that LowerProgram writes, read back through the verifying
// reader so every emitted program is also checked for well-formedness.
#include <gtest/gtest.h>

#include <cstring>

#include "compiler/lower/buffer_assignment.h"
#include "compiler/lower/lower_program.h"
#include "serialization/executable_generated.h"
#include "serialization/executable_reader.h"

namespace keel::lower {
namespace {

ir::TensorType F32(std::vector<int64_t> shape) { return {ir::DType::kF32, std::move(shape)}; }

// x[2,8] → Relu → a → keel.Reshape → v[16] → Relu → y   (+ Relu of x → z, an unrelated branch)
struct ChainGraph {
  ir::Graph g;
  ir::Value *x, *a, *v, *y;
  ChainGraph() {
    x = g.AddInput("x", F32({2, 8}));
    ir::Node* relu = g.AddNode("Relu", "relu1", {x}, 1, {"a"});
    a = relu->output(0);
    a->set_type(F32({2, 8}));
    ir::Node* reshape = g.AddNode("keel.Reshape", "reshape", {a}, 1, {"v"});
    v = reshape->output(0);
    v->set_type(F32({16}));
    ir::Node* relu2 = g.AddNode("Relu", "relu2", {v}, 1, {"y"});
    y = relu2->output(0);
    y->set_type(F32({16}));
    g.AddOutput(y);
  }
};

lower::StepKernel Kernel(const std::string& name, std::vector<std::vector<int64_t>> shapes, int num_inputs) {
  lower::StepKernel k;
  k.kernel.name = name;
  for (size_t i = 0; i < shapes.size(); ++i) {
    k.kernel.args.push_back({ser::DType::kF32, shapes[i],
                             static_cast<int>(i) < num_inputs ? ser::ArgAccess::kRead : ser::ArgAccess::kWrite});
  }
  return k;
}

std::vector<lower::StepKernel> ChainKernels() {
  lower::StepKernel view;
  view.is_view = true;
  return {Kernel("relu_2x8", {{2, 8}, {2, 8}}, 1), view, Kernel("relu_16", {{16}, {16}}, 1)};
}

TEST(BufferAssignment, ViewsShareTheirRootBufferAndStretchItsLifetime) {
  ChainGraph c;
  auto r = AssignBuffers(c.g, {});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->values.at(c.x).kind, ValueKind::kParam);
  EXPECT_EQ(r->values.at(c.a).kind, ValueKind::kBuffer);
  EXPECT_EQ(r->values.at(c.v).kind, ValueKind::kView);
  EXPECT_EQ(r->values.at(c.v).buffer, r->values.at(c.a).buffer);
  ASSERT_EQ(r->buffers.size(), 2u);  // a (with its view v) and y
  const auto& a = r->buffers[r->values.at(c.a).buffer];
  EXPECT_EQ(a.first_use, 0);
  EXPECT_EQ(a.last_use, 2);  // read through the view by relu2 at step 2
  const auto& y = r->buffers[r->values.at(c.y).buffer];
  EXPECT_EQ(y.first_use, 2);
  EXPECT_EQ(y.last_use, 3);  // graph output: live to the end
  EXPECT_EQ(a.size % 64, 0u);
}

TEST(BufferAssignment, WorkspaceLivesOnlyDuringItsStep) {
  ChainGraph c;
  BufferAssignmentOptions options;
  options.workspace_bytes = {100, 0, 0};
  auto r = AssignBuffers(c.g, options);
  ASSERT_TRUE(r.ok());
  ASSERT_GE(r->workspace_of_step[0], 0);
  const auto& ws = r->buffers[r->workspace_of_step[0]];
  EXPECT_EQ(ws.first_use, 0);
  EXPECT_EQ(ws.last_use, 0);
  EXPECT_EQ(ws.size, 128u);
  EXPECT_EQ(r->workspace_of_step[1], -1);
}

TEST(BufferAssignment, HostIoGivesParamsDeviceBuffersAndOutputsHostBuffers) {
  ChainGraph c;
  BufferAssignmentOptions options;
  options.device = memory::Device::kCuda;
  options.alignment = 256;
  options.host_io = true;
  auto r = AssignBuffers(c.g, options);
  ASSERT_TRUE(r.ok());
  ASSERT_GE(r->values.at(c.x).buffer, 0);
  EXPECT_EQ(r->buffers[r->values.at(c.x).buffer].device, memory::Device::kCuda);
  ASSERT_EQ(r->host_output_buffer.size(), 1u);
  const auto& host = r->buffers[r->host_output_buffer[0]];
  EXPECT_EQ(host.device, memory::Device::kCpu);
  EXPECT_EQ(host.first_use, r->num_steps);
}

TEST(BufferAssignment, ReadingAnUnproducedValueIsAnError) {
  ir::Graph g;
  ir::Value* dangling = g.AddValue("ghost");
  dangling->set_type(F32({4}));
  ir::Node* n = g.AddNode("Relu", "relu", {dangling}, 1);
  n->output(0)->set_type(F32({4}));
  g.AddOutput(n->output(0));
  auto r = AssignBuffers(g, {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("ghost"), std::string::npos) << r.status().ToString();
}

// Lowers, finishes and reads back; returns the verified view's main function.
struct Lowered {
  std::vector<uint8_t> bytes;
  ProgramStats stats;
  const fb::Executable* exe = nullptr;
};

Lowered LowerAndRead(const ir::Graph& g, const std::vector<StepKernel>& kernels, const ProgramOptions& options) {
  Lowered out;
  ser::ExecutableWriter writer;
  auto stats = LowerProgram(g, kernels, options, writer);
  EXPECT_TRUE(stats.ok()) << stats.status().ToString();
  if (!stats.ok()) return out;
  out.stats = *stats;
  auto bytes = writer.Finish();
  EXPECT_TRUE(bytes.ok()) << bytes.status().ToString();
  out.bytes = std::move(bytes).value();
  auto view = ser::ReadExecutable(out.bytes);
  EXPECT_TRUE(view.ok()) << view.status().ToString();
  if (view.ok()) out.exe = view->root;
  return out;
}

std::vector<fb::Op> Opcodes(const fb::Executable* exe) {
  std::vector<fb::Op> ops;
  for (const auto* inst : *exe->functions()->Get(0)->instructions()) ops.push_back(inst->op_type());
  return ops;
}

TEST(LowerProgram, StaticPlanBindsStoragesAtEntryAndViewsCostNoKernel) {
  ChainGraph c;
  Lowered l = LowerAndRead(c.g, ChainKernels(), {});
  ASSERT_NE(l.exe, nullptr);
  const std::vector<fb::Op> ops = Opcodes(l.exe);
  // greedy-size: one arena storage bound first; then tensor, invoke, view, tensor, invoke, ret.
  const std::vector<fb::Op> expected = {fb::Op::AllocStorage, fb::Op::AllocTensor, fb::Op::Invoke,
                                        fb::Op::AllocTensor,  fb::Op::AllocTensor, fb::Op::Invoke, fb::Op::Ret};
  EXPECT_EQ(ops, expected);
  EXPECT_EQ(l.stats.num_invokes, 2u);
  EXPECT_EQ(l.stats.num_kernels, 2u);
  EXPECT_EQ(l.exe->memory_plan()->strategy()->str(), "greedy-size");
  EXPECT_TRUE(memory::CheckPlan(l.stats.lifetimes, l.stats.plan).ok());
  // The view is placed at its root's offset with the new shape.
  const auto* view = l.exe->functions()->Get(0)->instructions()->Get(3)->op_as_AllocTensor();
  const auto* root = l.exe->functions()->Get(0)->instructions()->Get(1)->op_as_AllocTensor();
  EXPECT_EQ(view->offset(), root->offset());
  EXPECT_EQ(view->storage(), root->storage());
  EXPECT_EQ(view->shape()->size(), 1u);
}

TEST(LowerProgram, DynamicPlanAllocatesAndFreesAroundLifetimes) {
  ChainGraph c;
  ProgramOptions options;
  options.memory_plan = "dynamic";
  Lowered l = LowerAndRead(c.g, ChainKernels(), options);
  ASSERT_NE(l.exe, nullptr);
  int allocs = 0, frees = 0;
  for (fb::Op op : Opcodes(l.exe)) {
    allocs += op == fb::Op::AllocStorage;
    frees += op == fb::Op::FreeStorage;
  }
  EXPECT_EQ(allocs, 2);  // a and y
  EXPECT_EQ(frees, 1);   // a dies after relu2; y is a result and is not freed
}

TEST(LowerProgram, IdenticalKernelsAreShared) {
  ir::Graph g;
  ir::Value* x = g.AddInput("x", F32({4}));
  ir::Node* n1 = g.AddNode("Relu", "r1", {x}, 1);
  n1->output(0)->set_type(F32({4}));
  ir::Node* n2 = g.AddNode("Relu", "r2", {n1->output(0)}, 1);
  n2->output(0)->set_type(F32({4}));
  g.AddOutput(n2->output(0));
  auto k = Kernel("relu_4", {{4}, {4}}, 1);
  Lowered l = LowerAndRead(g, {k, k}, {});
  ASSERT_NE(l.exe, nullptr);
  EXPECT_EQ(l.exe->kernels()->size(), 1u);
  EXPECT_EQ(l.stats.num_invokes, 2u);
}

TEST(LowerProgram, ConstantsAreLoadedOnceAndParamOutputsAreCopied) {
  ir::Graph g;
  ir::Value* x = g.AddInput("x", F32({4}));
  auto data = std::make_shared<ir::TensorData>();
  data->type = F32({4});
  data->bytes.resize(16);
  const float w[4] = {1, 2, 3, 4};
  std::memcpy(data->bytes.data(), w, 16);
  ir::Value* c = g.AddConstant("w", data);
  ir::Node* n1 = g.AddNode("Add", "add1", {x, c}, 1);
  n1->output(0)->set_type(F32({4}));
  ir::Node* n2 = g.AddNode("Add", "add2", {n1->output(0), c}, 1);
  n2->output(0)->set_type(F32({4}));
  g.AddOutput(n2->output(0));
  g.AddOutput(x);  // returned unchanged: must be copied into a buffer
  auto k = Kernel("add_4", {{4}, {4}, {4}}, 2);
  Lowered l = LowerAndRead(g, {k, k}, {});
  ASSERT_NE(l.exe, nullptr);
  int load_consts = 0, copies = 0;
  for (fb::Op op : Opcodes(l.exe)) {
    load_consts += op == fb::Op::LoadConst;
    copies += op == fb::Op::Copy;
  }
  EXPECT_EQ(load_consts, 1);
  EXPECT_EQ(copies, 1);
  EXPECT_EQ(l.stats.constant_bytes, 16u);
  ASSERT_EQ(l.exe->constants()->size(), 1u);
}

TEST(LowerProgram, CudaTargetCopiesInputsInAndResultsOut) {
  ChainGraph c;
  ProgramOptions options;
  options.device = ser::DeviceKind::kCuda;
  options.alignment = 256;
  auto kernels = ChainKernels();
  for (auto& k : kernels) {
    k.kernel.device = ser::DeviceKind::kCuda;
    k.kernel.kind = ser::KernelKind::kCudaGenerated;
    k.kernel.launch = ser::LaunchDesc{};
  }
  Lowered l = LowerAndRead(c.g, kernels, options);
  ASSERT_NE(l.exe, nullptr);
  const std::vector<fb::Op> ops = Opcodes(l.exe);
  int copies = 0;
  for (fb::Op op : ops) copies += op == fb::Op::Copy;
  EXPECT_EQ(copies, 2);  // x up, y down
  bool has_cuda_arena = false, has_cpu_arena = false;
  for (const auto* arena : *l.exe->memory_plan()->arenas()) {
    has_cuda_arena |= arena->device() == fb::DeviceKind::cuda;
    has_cpu_arena |= arena->device() == fb::DeviceKind::cpu;
  }
  EXPECT_TRUE(has_cuda_arena);
  EXPECT_TRUE(has_cpu_arena);
}

TEST(LowerProgram, UnknownPlannerIsAnError) {
  ChainGraph c;
  ProgramOptions options;
  options.memory_plan = "no-such-planner";
  ser::ExecutableWriter writer;
  auto r = LowerProgram(c.g, ChainKernels(), options, writer);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("no-such-planner"), std::string::npos) << r.status().ToString();
}

}  // namespace
}  // namespace keel::lower
