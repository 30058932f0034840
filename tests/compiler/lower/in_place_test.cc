// Tests for in-place reuse in compiler/lower: AssignBuffers sets
// TensorLifetime::may_alias_with exactly when an elementwise fused step may write
// its output over a same-shape input that dies there (buffer_assignment.h), and
// LowerProgram only allows it for generated kernels (InPlaceCapableSteps).
//
// The graphs are hand-made chains of keel.Fused nodes (no bodies: buffer
// assignment only looks at the "keel.pattern" attribute, shapes and uses).
#include <gtest/gtest.h>

#include <memory>

#include "compiler/lower/buffer_assignment.h"
#include "compiler/lower/lower_program.h"

namespace keel::lower {
namespace {

ir::TensorType Type(std::vector<int64_t> shape, ir::DType dtype = ir::DType::kF32) {
  return {dtype, std::move(shape)};
}

// A keel.Fused node with one output of `type` and the given pattern.
ir::Value* Fused(ir::Graph& g, const std::string& name, const std::string& pattern, std::vector<ir::Value*> inputs,
                 ir::TensorType type) {
  ir::Node* n = g.AddNode("keel.Fused", name, std::move(inputs), 1, {name + "_out"});
  n->attrs().Set("keel.pattern", pattern);
  n->output(0)->set_type(std::move(type));
  return n->output(0);
}

ir::Value* Constant(ir::Graph& g, const std::string& name, ir::TensorType type) {
  auto data = std::make_shared<ir::TensorData>();
  data->type = type;
  data->bytes.assign(static_cast<size_t>(type.ByteSize()), 0);
  return g.AddConstant(name, data);
}

// The alias target of value v's buffer (-1 when none), checked to be a buffer.
int32_t AliasOf(const BufferAssignment& r, const ir::Value* v) {
  const ValueInfo& info = r.values.at(v);
  EXPECT_GE(info.buffer, 0);
  return r.buffers[info.buffer].may_alias_with;
}
int32_t BufferOf(const BufferAssignment& r, const ir::Value* v) { return r.values.at(v).buffer; }

// x → conv(anchor) → a → gelu(elementwise, a + bias[8]) → b → fc(anchor) → y
struct Chain {
  ir::Graph g;
  ir::Value *x, *a, *b, *y;
  explicit Chain(const std::string& pattern = "elementwise") {
    x = g.AddInput("x", Type({2, 8}));
    a = Fused(g, "conv", "anchor", {x}, Type({2, 8}));
    ir::Value* bias = Constant(g, "bias", Type({8}));
    b = Fused(g, "gelu", pattern, {a, bias}, Type({2, 8}));
    y = Fused(g, "fc", "anchor", {b}, Type({2, 8}));
    g.AddOutput(y);
  }
};

TEST(InPlace, ElementwiseOutputAliasesTheDyingSameShapeInput) {
  Chain c;
  auto r = AssignBuffers(c.g, {});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(AliasOf(*r, c.b), BufferOf(*r, c.a));
  EXPECT_EQ(AliasOf(*r, c.a), -1);  // an anchor step
  EXPECT_EQ(AliasOf(*r, c.y), -1);
  // The planners accept it and the pair may share bytes.
  auto planner = memory::CreatePlanner("greedy-size");
  ASSERT_TRUE(planner.ok());
  auto plan = (*planner)->MakePlan(r->buffers, {});
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_TRUE(memory::CheckPlan(r->buffers, *plan).ok());
  // greedy-size takes the partner's slot when it costs nothing: b over a.
  EXPECT_EQ(plan->placements[BufferOf(*r, c.b)].offset, plan->placements[BufferOf(*r, c.a)].offset);
}

TEST(InPlace, OnlyElementwisePatterns) {
  for (const char* pattern : {"anchor", "anchor+epilogue", "injective", ""}) {
    Chain c(pattern);
    auto r = AssignBuffers(c.g, {});
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(AliasOf(*r, c.b), -1) << pattern;
  }
  // A plain (unfused) elementwise node is not a generated elementwise group either.
  ir::Graph g;
  ir::Value* x = g.AddInput("x", Type({4}));
  ir::Value* a = Fused(g, "conv", "anchor", {x}, Type({4}));
  ir::Node* relu = g.AddNode("Relu", "relu", {a}, 1, {"b"});
  relu->output(0)->set_type(Type({4}));
  g.AddOutput(relu->output(0));
  auto r = AssignBuffers(g, {});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(AliasOf(*r, relu->output(0)), -1);
}

TEST(InPlace, DisabledByOptions) {
  Chain c;
  BufferAssignmentOptions off;
  off.in_place = false;
  auto r = AssignBuffers(c.g, off);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(AliasOf(*r, c.b), -1);

  BufferAssignmentOptions steps;
  steps.in_place_steps = {1, 0, 1};  // step 1 (gelu) runs a kernel that cannot work in place
  r = AssignBuffers(c.g, steps);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(AliasOf(*r, c.b), -1);
  steps.in_place_steps = {0, 1, 0};
  r = AssignBuffers(c.g, steps);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(AliasOf(*r, c.b), BufferOf(*r, c.a));
}

TEST(InPlace, NeverOverABroadcastInput) {
  // a[1,8] dies at the elementwise step but is broadcast to [2,8]; the other
  // operand is a param (no planned buffer).
  ir::Graph g;
  ir::Value* x = g.AddInput("x", Type({2, 8}));
  ir::Value* small = g.AddInput("s", Type({1, 8}));
  ir::Value* a = Fused(g, "proj", "anchor", {small}, Type({1, 8}));
  ir::Value* b = Fused(g, "add", "elementwise", {a, x}, Type({2, 8}));
  g.AddOutput(b);
  auto r = AssignBuffers(g, {});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(AliasOf(*r, b), -1);

  // Same byte size but another shape ([8,2] vs [2,8]) is not element-for-element either.
  ir::Graph g2;
  ir::Value* x2 = g2.AddInput("x", Type({2, 8}));
  ir::Value* t = Fused(g2, "transpose", "injective", {x2}, Type({8, 2}));
  ir::Value* u = Fused(g2, "neg", "elementwise", {t}, Type({2, 8}));  // shape-inconsistent on purpose
  g2.AddOutput(u);
  r = AssignBuffers(g2, {});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(AliasOf(*r, u), -1);
}

TEST(InPlace, PicksTheSameShapeInputAmongSeveral) {
  // b = a_small[1,8] + a_full[2,8]: only a_full (dying here) may be reused.
  ir::Graph g;
  ir::Value* x = g.AddInput("x", Type({2, 8}));
  ir::Value* a_small = Fused(g, "pool", "anchor", {x}, Type({1, 8}));
  ir::Value* a_full = Fused(g, "conv", "anchor", {x}, Type({2, 8}));
  ir::Value* b = Fused(g, "add", "elementwise", {a_small, a_full}, Type({2, 8}));
  g.AddOutput(b);
  auto r = AssignBuffers(g, {});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(AliasOf(*r, b), BufferOf(*r, a_full));
}

TEST(InPlace, NeverOverAValueReadLater) {
  Chain c;
  // a is read again after the elementwise step.
  ir::Value* z = Fused(c.g, "later", "anchor", {c.a}, Type({2, 8}));
  c.g.AddOutput(z);
  auto r = AssignBuffers(c.g, {});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(AliasOf(*r, c.b), -1);
}

TEST(InPlace, NeverOverAGraphOutput) {
  Chain c;
  c.g.AddOutput(c.a);
  auto r = AssignBuffers(c.g, {});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(AliasOf(*r, c.b), -1);
}

TEST(InPlace, NeverOverParamsOrConstants) {
  // b = x + c, x a param and c a constant of the output's shape, both "dying" here.
  for (bool host_io : {false, true}) {
    ir::Graph g;
    ir::Value* x = g.AddInput("x", Type({2, 8}));
    ir::Value* k = Constant(g, "k", Type({2, 8}));
    ir::Value* b = Fused(g, "add", "elementwise", {x, k}, Type({2, 8}));
    ir::Value* y = Fused(g, "fc", "anchor", {b}, Type({2, 8}));
    g.AddOutput(y);
    BufferAssignmentOptions options;
    options.host_io = host_io;  // CUDA: x gets a planned device buffer, still a param
    if (host_io) options.device = memory::Device::kCuda;
    auto r = AssignBuffers(g, options);
    ASSERT_TRUE(r.ok());
    if (host_io) {
      ASSERT_GE(r->values.at(x).buffer, 0);
    }
    EXPECT_EQ(AliasOf(*r, b), -1) << host_io;
  }
}

TEST(InPlace, ViewsOfTheDyingBuffer) {
  // a[2,8] → reshape → v[16] → elementwise → b[16]: a's buffer dies at b's step.
  {
    ir::Graph g;
    ir::Value* x = g.AddInput("x", Type({2, 8}));
    ir::Value* a = Fused(g, "conv", "anchor", {x}, Type({2, 8}));
    ir::Node* reshape = g.AddNode("keel.Reshape", "reshape", {a}, 1, {"v"});
    reshape->output(0)->set_type(Type({16}));
    ir::Value* b = Fused(g, "relu", "elementwise", {reshape->output(0)}, Type({16}));
    g.AddOutput(b);
    auto r = AssignBuffers(g, {});
    ASSERT_TRUE(r.ok());
    ASSERT_EQ(r->values.at(reshape->output(0)).kind, ValueKind::kView);
    EXPECT_EQ(AliasOf(*r, b), BufferOf(*r, a));
  }
  // ... but not when the root is read after the step through the root itself.
  {
    ir::Graph g;
    ir::Value* x = g.AddInput("x", Type({2, 8}));
    ir::Value* a = Fused(g, "conv", "anchor", {x}, Type({2, 8}));
    ir::Node* reshape = g.AddNode("keel.Reshape", "reshape", {a}, 1, {"v"});
    reshape->output(0)->set_type(Type({16}));
    ir::Value* b = Fused(g, "relu", "elementwise", {reshape->output(0)}, Type({16}));
    ir::Value* z = Fused(g, "later", "anchor", {a}, Type({2, 8}));
    g.AddOutput(b);
    g.AddOutput(z);
    auto r = AssignBuffers(g, {});
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(AliasOf(*r, b), -1);
  }
  // ... nor when the step reads the buffer through a second value (other indices).
  {
    ir::Graph g;
    ir::Value* x = g.AddInput("x", Type({2, 8}));
    ir::Value* a = Fused(g, "conv", "anchor", {x}, Type({2, 8}));
    ir::Node* reshape = g.AddNode("keel.Reshape", "reshape", {a}, 1, {"v"});
    reshape->output(0)->set_type(Type({1, 2, 8}));
    ir::Value* b = Fused(g, "add", "elementwise", {reshape->output(0), a}, Type({1, 2, 8}));
    g.AddOutput(b);
    auto r = AssignBuffers(g, {});
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(AliasOf(*r, b), -1);
  }
}

TEST(InPlace, ByteSizeMustMatch) {
  ir::Graph g;
  ir::Value* x = g.AddInput("x", Type({2, 8}));
  ir::Value* a = Fused(g, "conv", "anchor", {x}, Type({2, 8}));
  ir::Value* half = Fused(g, "cast", "elementwise", {a}, Type({2, 8}, ir::DType::kF16));
  ir::Value* ints = Fused(g, "cast2", "elementwise", {half}, Type({2, 8}, ir::DType::kI32));
  ir::Value* back = Fused(g, "cast3", "elementwise", {ints}, Type({2, 8}, ir::DType::kF32));
  g.AddOutput(back);
  auto r = AssignBuffers(g, {});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(AliasOf(*r, half), -1);                   // 32 bytes over 64
  EXPECT_EQ(AliasOf(*r, ints), -1);                   // 64 over 32
  EXPECT_EQ(AliasOf(*r, back), BufferOf(*r, ints));  // i32 → f32: same bytes per element
}

StepKernel Generated(const std::string& name, int num_args) {
  StepKernel k;
  k.kernel.name = name;
  for (int i = 0; i < num_args; ++i) {
    k.kernel.args.push_back({ser::DType::kF32, {2, 8}, i + 1 < num_args ? ser::ArgAccess::kRead : ser::ArgAccess::kWrite});
  }
  return k;
}

TEST(InPlace, CapableStepsAreGeneratedKernelsWithDefaultArguments) {
  StepKernel plain = Generated("k", 2);
  StepKernel cuda = Generated("k", 2);
  cuda.kernel.kind = ser::KernelKind::kCudaGenerated;
  StepKernel view;
  view.is_view = true;
  StepKernel library = Generated("gemm", 2);
  library.kernel.kind = ser::KernelKind::kLibrary;
  library.kernel.library_op = "cublas.gemm";
  StepKernel explicit_args = Generated("k", 2);
  explicit_args.args = {{StepArg::Kind::kInput, 0}, {StepArg::Kind::kOutput, 0}};
  StepKernel with_then = Generated("k", 2);
  with_then.then.push_back({Generated("epilogue", 2).kernel, {}});
  EXPECT_EQ(InPlaceCapableSteps({plain, cuda, view, library, explicit_args, with_then}),
            (std::vector<uint8_t>{1, 1, 0, 0, 0, 0}));
}

TEST(InPlace, LowerProgramKeepsAliasesOnlyForCapableKernels) {
  for (bool library : {false, true}) {
    Chain c;
    std::vector<StepKernel> kernels = {Generated("conv", 2), Generated("gelu", 3), Generated("fc", 2)};
    if (library) {
      kernels[1].kernel.kind = ser::KernelKind::kLibrary;
      kernels[1].kernel.library_op = "test.op";
    }
    ser::ExecutableWriter writer;
    auto stats = LowerProgram(c.g, kernels, ProgramOptions{}, writer);
    ASSERT_TRUE(stats.ok()) << stats.status().ToString();
    int aliases = 0;
    for (const memory::TensorLifetime& t : stats->lifetimes) aliases += t.may_alias_with >= 0 ? 1 : 0;
    EXPECT_EQ(aliases, library ? 0 : 1) << library;
  }
}

}  // namespace
}  // namespace keel::lower
