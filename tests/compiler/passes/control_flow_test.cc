// tests/compiler/passes/control_flow_test.cc — subgraph import (captures through
// nested scopes) and the inlining/unrolling of If, Loop and Scan by shape
// inference, with the refusals for what cannot be made static.
#include "compiler/passes/control_flow.h"

#include <gtest/gtest.h>

#include "compiler/frontend/onnx_importer.h"
#include "compiler/passes/shape_inference.h"
#include "tests/compiler/frontend/onnx_test_util.h"

namespace keel::passes {
namespace {

using namespace keel::testing_onnx;  // NOLINT
constexpr int32_t kF = onnx::TensorProto::FLOAT;
constexpr int32_t kI64 = onnx::TensorProto::INT64;
constexpr int32_t kBool = onnx::TensorProto::BOOL;

void AttrGraph(onnx::NodeProto* n, const std::string& name, const onnx::ModelProto& sub) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::GRAPH);
  a->mutable_g()->CopyFrom(sub.graph());
}

Result<std::unique_ptr<ir::Graph>> Import(const onnx::ModelProto& m) {
  return frontend::ImportOnnxBytes(m.SerializeAsString(), ".", "test", {});
}

int Count(const ir::Graph& g, const std::string& op) {
  int n = 0;
  for (const ir::Node* node : g.nodes()) n += node->op_type() == op;
  return n;
}

// y = Loop(M=3){ acc_out = If(i == 1 ? acc + x : acc * x) }: the If's branches read
// x from the main graph, two scopes out.
onnx::ModelProto NestedModel(int64_t trip) {
  auto m = NewModel(13);
  AddInput(m, "x", {2, 3});
  AddInitI64(m, "M", {}, {trip});
  AddInitI64(m, "one", {}, {1});
  onnx::ModelProto then_b = NewModel(13), else_b = NewModel(13), body = NewModel(13);
  AddNode(then_b, "Add", {"acc", "x"}, {"t"});
  AddOutput(then_b, "t");
  AddNode(else_b, "Mul", {"acc", "x"}, {"e"});
  AddOutput(else_b, "e");
  AddInput(body, "i", {}, kI64);
  AddInput(body, "c_in", {}, kBool);
  AddInput(body, "acc", {2, 3});
  AddNode(body, "Equal", {"i", "one"}, {"is_one"});
  auto* iff = AddNode(body, "If", {"is_one"}, {"acc_out"});
  AttrGraph(iff, "then_branch", then_b);
  AttrGraph(iff, "else_branch", else_b);
  AddNode(body, "Identity", {"c_in"}, {"c_out"});
  AddOutput(body, "c_out", kBool);
  AddOutput(body, "acc_out");
  auto* loop = AddNode(m, "Loop", {"M", "", "x"}, {"y"});
  AttrGraph(loop, "body", body);
  AddOutput(m, "y");
  return m;
}

TEST(ControlFlowTest, ImportsCapturesThroughNestedScopes) {
  auto g = Import(NestedModel(3));
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  ir::Node* loop = nullptr;
  for (ir::Node* n : (*g)->nodes()) loop = n->op_type() == "Loop" ? n : loop;
  ASSERT_NE(loop, nullptr);
  // Formal M, cond, x; then the captures: `one` and `x` (x again: the If reads it).
  EXPECT_EQ(*loop->attrs().GetInt("formal_inputs", -1), 3);
  const ir::Graph* body = loop->subgraph("body");
  ASSERT_NE(body, nullptr);
  EXPECT_EQ(body->inputs().size(), 5u);
  auto caps = *loop->attrs().GetInts("body.captures", {});
  ASSERT_EQ(caps.size(), 2u);
  EXPECT_EQ(loop->input(static_cast<size_t>(caps[1]))->name(), "x");
  ir::Node* inner = nullptr;
  for (ir::Node* n : body->nodes()) inner = n->op_type() == "If" ? n : inner;
  ASSERT_NE(inner, nullptr);
  EXPECT_EQ(inner->subgraph("then_branch")->inputs().size(), 2u);  // acc, x
}

TEST(ControlFlowTest, UnrollsLoopAndInlinesTheTakenBranches) {
  auto g = Import(NestedModel(3));
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  Status s = InferShapes(**g);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(Count(**g, "Loop"), 0);
  EXPECT_EQ(Count(**g, "If"), 0);
  EXPECT_EQ(Count(**g, "Where"), 0);  // every condition folded
  EXPECT_EQ(Count(**g, "Add"), 1);    // iteration 1
  EXPECT_EQ(Count(**g, "Mul"), 2);    // iterations 0 and 2
  EXPECT_EQ((*g)->outputs()[0]->type().ToString(), "f32[2,3]");
  EXPECT_EQ((*g)->outputs()[0]->name(), "y");
}

TEST(ControlFlowTest, RefusesAnUnrollAboveTheLimit) {
  auto g = Import(NestedModel(kMaxUnrolledIterations + 1));
  ASSERT_TRUE(g.ok());
  Status s = InferShapes(**g);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("unrolling limit"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("Loop"), std::string::npos);
}

// If on a runtime condition whose branches give different shapes: NeedsConstant.
TEST(ControlFlowTest, RuntimeConditionWithDifferentBranchTypesNeedsAConstant) {
  auto m = NewModel(13);
  AddInput(m, "x", {2, 3});
  AddInput(m, "c", {}, kBool);
  onnx::ModelProto then_b = NewModel(13), else_b = NewModel(13);
  AddNode(then_b, "Relu", {"x"}, {"t"});
  AddOutput(then_b, "t");
  AddNode(else_b, "Transpose", {"x"}, {"e"});
  AddOutput(else_b, "e");
  auto* iff = AddNode(m, "If", {"c"}, {"y"});
  AttrGraph(iff, "then_branch", then_b);
  AttrGraph(iff, "else_branch", else_b);
  AddOutput(m, "y");
  auto g = Import(m);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  Status s = InferShapes(**g);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("input 0 ('c') must be a compile-time constant"), std::string::npos) << s.message();
}

// A Loop whose body computes its condition from data: data-dependent termination.
TEST(ControlFlowTest, RefusesDataDependentTermination) {
  auto m = NewModel(13);
  AddInput(m, "x", {3});
  AddInitI64(m, "M", {}, {10});
  auto* t = m.mutable_graph()->add_initializer();
  t->set_name("cond");
  t->set_data_type(kBool);
  t->add_int32_data(1);
  onnx::ModelProto body = NewModel(13);
  AddInput(body, "i", {}, kI64);
  AddInput(body, "c_in", {}, kBool);
  AddInput(body, "acc", {3});
  AddNode(body, "Neg", {"acc"}, {"acc_out"});
  AddNode(body, "ReduceMax", {"acc_out"}, {"mx"});
  AddNode(body, "Greater", {"mx", "zero"}, {"c_out"});
  AddOutput(body, "c_out", kBool);
  AddOutput(body, "acc_out");
  AddInitF32(m, "zero", {1}, {0.0f});
  auto* loop = AddNode(m, "Loop", {"M", "cond", "x"}, {"y"});
  AttrGraph(loop, "body", body);
  AddOutput(m, "y");
  auto g = Import(m);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  Status s = InferShapes(**g);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_NE(s.message().find("data-dependent termination"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace keel::passes
