// tests/compiler/ir/graph_test.cc — Graph construction, use lists, mutation
// helpers, topological sorting and Verify on small hand-built graphs.
#include "compiler/ir/graph.h"

#include <gtest/gtest.h>

#include <cstring>

namespace keel::ir {
namespace {

TensorType F32(std::vector<int64_t> shape) { return TensorType{DType::kF32, std::move(shape)}; }

TensorDataPtr Scalar(float v) {
  auto t = std::make_shared<TensorData>();
  t->type = F32({});
  t->bytes.resize(4);
  std::memcpy(t->bytes.data(), &v, 4);
  return t;
}

TEST(DTypeTest, SizesAndNames) {
  EXPECT_EQ(DTypeSize(DType::kF32), 4u);
  EXPECT_EQ(DTypeSize(DType::kI64), 8u);
  EXPECT_EQ(DTypeSize(DType::kF16), 2u);
  EXPECT_STREQ(DTypeName(DType::kI64), "i64");
  TensorType t = F32({1, 3, 4});
  EXPECT_EQ(t.NumElements(), 12);
  EXPECT_EQ(t.ByteSize(), 48);
  EXPECT_EQ(t.ToString(), "f32[1,3,4]");
  EXPECT_EQ(F32({}).NumElements(), 1);
}

TEST(AttributesTest, TypedGetters) {
  Attributes a;
  a.Set("axis", int64_t{2});
  a.Set("alpha", 0.5);
  a.Set("pads", std::vector<int64_t>{1, 1});
  EXPECT_EQ(*a.GetInt("axis", 0), 2);
  EXPECT_EQ(*a.GetInt("missing", 7), 7);
  EXPECT_DOUBLE_EQ(*a.GetFloat("alpha", 1.0), 0.5);
  EXPECT_EQ(*a.GetInts("pads", {}), (std::vector<int64_t>{1, 1}));
  auto bad = a.GetInt("alpha", 0);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("alpha"), std::string::npos);
  EXPECT_EQ(a.GetTensor("value").status().code(), StatusCode::kNotFound);

  Attributes b;
  b.Set("pads", std::vector<int64_t>{1, 1});
  b.Set("alpha", 0.5);
  b.Set("axis", int64_t{2});
  EXPECT_TRUE(a == b);
  b.Set("axis", int64_t{3});
  EXPECT_FALSE(a == b);
  // Tensors compare by content.
  Attributes c, d;
  c.Set("value", Scalar(1.0f));
  d.Set("value", Scalar(1.0f));
  EXPECT_TRUE(c == d);
  d.Set("value", Scalar(2.0f));
  EXPECT_FALSE(c == d);
}

TEST(GraphTest, BuildUsesAndVerify) {
  Graph g;
  g.set_name("g");
  Value* x = g.AddInput("x", F32({2, 3}));
  Value* c = g.AddConstant("c", Scalar(2.0f));
  Node* add = g.AddNode("Add", "add0", {x, c}, 1, {"y"});
  Node* relu = g.AddNode("Relu", "relu0", {add->output(0)}, 1);
  g.AddOutput(relu->output(0));
  EXPECT_EQ(add->output(0)->name(), "y");
  EXPECT_EQ(relu->output(0)->name(), "relu0:0");
  EXPECT_EQ(add->output(0)->producer(), add);
  ASSERT_EQ(x->uses().size(), 1u);
  EXPECT_EQ(x->uses()[0].node, add);
  EXPECT_EQ(x->uses()[0].input_index, 0);
  EXPECT_TRUE(c->is_constant());
  EXPECT_EQ(c->type(), F32({}));
  EXPECT_TRUE(g.Verify(false).ok()) << g.Verify(false).ToString();
  // Outputs of nodes have no type yet.
  Status s = g.Verify(true);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("add0"), std::string::npos) << s.message();
  EXPECT_TRUE(g.IsGraphOutput(relu->output(0)));
  EXPECT_FALSE(g.IsGraphOutput(add->output(0)));
}

TEST(GraphTest, ReplaceAllUsesAndRemove) {
  Graph g;
  Value* x = g.AddInput("x", F32({4}));
  Node* id = g.AddNode("Identity", "id", {x}, 1);
  Node* a = g.AddNode("Relu", "a", {id->output(0)}, 1);
  Node* b = g.AddNode("Sigmoid", "b", {id->output(0)}, 1);
  g.AddOutput(a->output(0));
  g.AddOutput(id->output(0));
  // Cannot remove a node whose output is used.
  EXPECT_FALSE(g.RemoveNode(id).ok());
  g.ReplaceAllUsesWith(id->output(0), x);
  EXPECT_EQ(a->input(0), x);
  EXPECT_EQ(b->input(0), x);
  EXPECT_EQ(g.outputs()[1], x);
  EXPECT_EQ(x->uses().size(), 3u);
  size_t values_before = g.values().size();
  ASSERT_TRUE(g.RemoveNode(id).ok());
  EXPECT_EQ(g.num_nodes(), 2u);
  EXPECT_EQ(g.values().size(), values_before - 1);
  EXPECT_EQ(x->uses().size(), 2u);
  // b is dead: its output is unused.
  ASSERT_TRUE(g.RemoveNode(b).ok());
  EXPECT_EQ(x->uses().size(), 1u);
  EXPECT_TRUE(g.Verify(false).ok()) << g.Verify(false).ToString();

  Value* unused = g.AddConstant("unused", Scalar(1.0f));
  (void)unused;
  size_t n = g.values().size();
  g.RemoveDeadValues();
  EXPECT_EQ(g.values().size(), n - 1);
}

TEST(GraphTest, SetInputsKeepsUsesConsistent) {
  Graph g;
  Value* x = g.AddInput("x", F32({4}));
  Value* lo = g.AddConstant("lo", Scalar(0.0f));
  Node* clip = g.AddNode("Clip", "clip", {x, lo, nullptr}, 1);
  EXPECT_EQ(lo->uses().size(), 1u);
  clip->SetInputs({x});
  EXPECT_TRUE(lo->uses().empty());
  EXPECT_EQ(clip->inputs().size(), 1u);
  g.AddOutput(clip->output(0));
  EXPECT_TRUE(g.Verify(false).ok());
}

TEST(GraphTest, TopologicalSortIsStableAndFindsCycles) {
  Graph g;
  Value* x = g.AddInput("x", F32({4}));
  Value* later = g.AddValue("later");
  (void)later;
  // Build consumer first, then producer: an invalid order.
  Node* consumer = g.AddNode("Relu", "consumer", {x}, 1);
  Node* independent = g.AddNode("Tanh", "independent", {x}, 1);
  Node* producer = g.AddNode("Sigmoid", "producer", {x}, 1);
  consumer->SetInput(0, producer->output(0));
  g.AddOutput(consumer->output(0));
  g.AddOutput(independent->output(0));
  Status bad = g.Verify(false);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find("consumer"), std::string::npos) << bad.message();
  ASSERT_TRUE(g.TopologicalSort().ok());
  auto nodes = g.nodes();
  ASSERT_EQ(nodes.size(), 3u);
  // independent keeps its place relative to the others; producer precedes consumer.
  EXPECT_EQ(nodes[0], independent);
  EXPECT_EQ(nodes[1], producer);
  EXPECT_EQ(nodes[2], consumer);
  EXPECT_TRUE(g.Verify(false).ok());

  // Make a cycle: producer consumes consumer's output.
  producer->SetInput(0, consumer->output(0));
  Status cyc = g.TopologicalSort();
  ASSERT_FALSE(cyc.ok());
  EXPECT_NE(cyc.message().find("cycle"), std::string::npos);
}

TEST(GraphTest, InsertNodeBefore) {
  Graph g;
  Value* x = g.AddInput("x", F32({4}));
  Node* last = g.AddNode("Relu", "last", {x}, 1);
  Node* first = g.InsertNodeBefore(last, "Neg", "first", {x}, 1);
  last->SetInput(0, first->output(0));
  g.AddOutput(last->output(0));
  EXPECT_EQ(g.nodes()[0], first);
  EXPECT_TRUE(g.Verify(false).ok());
}

TEST(GraphTest, VerifyChecksFusedBodyArity) {
  Graph g;
  Value* x = g.AddInput("x", F32({4}));
  Node* fused = g.AddNode("keel.Fused", "f", {x}, 1);
  auto body = std::make_unique<Graph>();
  Value* bx = body->AddInput("bx", F32({4}));
  Node* r = body->AddNode("Relu", "r", {bx}, 1);
  body->AddOutput(r->output(0));
  body->AddOutput(bx);  // one output too many
  fused->set_body(std::move(body));
  g.AddOutput(fused->output(0));
  Status s = g.Verify(false);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("body"), std::string::npos) << s.message();
}

TEST(GraphTest, VerifyRejectsUndefinedInput) {
  Graph g;
  Value* x = g.AddInput("x", F32({4}));
  Value* dangling = g.AddValue("dangling");
  Node* add = g.AddNode("Add", "add", {x, dangling}, 1);
  g.AddOutput(add->output(0));
  Status s = g.Verify(false);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("dangling"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace keel::ir
